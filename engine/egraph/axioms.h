// The sound axioms of the tensor term language (tensor_lang.h), as one readable table in
// axioms.cpp. Guards read the e-class analysis of `tg`, so the rules belong to one TensorGraph.
#pragma once
#include <vector>

#include "engine/egraph/rewrite.h"
#include "engine/egraph/tensor_lang.h"

namespace prism::eg {

std::vector<Rewrite> tensor_axioms(TensorGraph& tg);

}  // namespace prism::eg
