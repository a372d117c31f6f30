// IR -> tensor terms. A lowered program's outputs become terms of tensor_lang.h: binary operands
// are padded to equal rank with unsqueeze@0 (scalars stay scalars), reductions without keepdims
// become a keepdims reduction and a squeeze, and a reshape becomes squeezes, axis splits and
// unsqueezes when it is one (otherwise an opaque reshape node).
//
// Casts are part of the terms where they change what the program computes: a cast that rounds a
// value a computation of another dtype then reads (engine/ir/rounding_casts.h) is a cast term, a
// function the axioms only move through layout and never remove. Every other cast is its
// operand: a cast to f32 or to the operand's own dtype changes no value, and a cast to the dtype
// its readers compute in is the implicit rounding of a 16-bit value, which the float checks judge
// (docs/design.md, "Numerics").
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
