// A CPU pass over the kernel IR: a sum whose operand is x * x or square(x), where nothing else
// reads the product, sums x's squares as it reads x (Stmt::squares) instead of writing the product to a
// tile and reading it back. RMSNorm's and a variance's sum of squares (and layernorm's two-pass
// one of x - mean) then make one pass over the row instead of three, which matters where the
// row does not stay in L1. The product's tile stays allocated, unused.
#pragma once
#include "engine/backend/kernel_ir.h"

namespace prism::backend::cpu {

// Rewrites every custom kernel of `program` in place; returns how many sums it fused.
int fuse_squares(kir::Program& program);

}  // namespace prism::backend::cpu
