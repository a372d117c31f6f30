// IR -> tensor terms. A lowered program's outputs become terms of tensor_lang.h: binary operands
// are padded to equal rank with unsqueeze@0 (scalars stay scalars), reductions without keepdims
// become a keepdims reduction and a squeeze, and a reshape becomes squeezes, axis splits and
// unsqueezes when it is one (otherwise an opaque reshape node).
#pragma once
#include <cstdint>
#include <vector>

#include "engine/egraph/tensor_lang.h"
#include "engine/ir/program.h"

namespace prism::eg {

struct AddedTerms {
  std::vector<Id> outputs;  // one id per program output
  uint64_t added = 0;       // term nodes that were new to the e-graph
  uint64_t shared = 0;      // term nodes the e-graph already held (hash-consing)
};

// `lowered` must have no composites. Throws Error{InvalidArgument} for what the terms cannot
// express (a 1-D matmul operand).
AddedTerms add_program(TensorGraph& tg, const Program& lowered);

// A reshape of x's term to `to`, written as add_program writes one: squeezes, axis splits and
// unsqueezes when it is that, else an opaque reshape node.
Id add_reshape(TensorGraph& tg, Id x, const std::vector<Dim>& to);

}  // namespace prism::eg
