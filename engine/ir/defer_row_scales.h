// Moves a per-row scale of a matmul's left operand past the matmul:
//
//   matmul(x / y, w) = matmul(x, w) / y      y: one value per row of x (its last dim is 1), or a scalar
//   matmul(x * y, w) = matmul(x, w) * y      (either operand of the mul may be the row scale)
//
// (the contraction runs along x's rows, which y does not vary along). Attention written as
// matmul(softmax(S), V) becomes matmul(exp(S - max), V) / sum(exp(S - max)): the form whose
// numerator and denominator are both sums over the key length, so a loop over the keys can
// accumulate both (online softmax) and normalize once at the end. Applied until no matmul has
// such an operand; values no longer read are dropped. The result computes what the program does
// (up to rounding: the scale is applied after the sum instead of before).
#pragma once
#include <optional>

#include "engine/ir/program.h"

namespace prism {

// `lowered`: a program with primitives only (lower_composites). None when no matmul reads a
// row-scaled operand.
std::optional<Program> defer_row_scales(const Program& lowered);

}  // namespace prism
