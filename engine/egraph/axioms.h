// The sound axioms of the tensor term language (tensor_lang.h), as one readable table in
// axioms.cpp. Guards read the e-class analysis of `tg`, so the rules belong to one TensorGraph.
#pragma once
#include <vector>

#include "engine/egraph/rewrite.h"
#include "engine/egraph/tensor_lang.h"

namespace prism::eg {

std::vector<Rewrite> tensor_axioms(TensorGraph& tg);

// A rule for proofs only: the search's expression e-graph (search/expression.cpp) leaves it out,
// so its enumeration never builds the forms it reaches; a seed carries those whole instead.
// sum-centred-square is one: enumerating every small DAG equal to a one-pass variance made a
// row variance's search run out of budget at five times the families (one_pass_variance.h
// seeds the form once).
bool proof_only(const Rewrite& rule);

}  // namespace prism::eg
