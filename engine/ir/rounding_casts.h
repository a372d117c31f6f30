// Which casts a proof keeps (docs/design.md, "Casts in proofs"). A value of a 16-bit dtype is
// rounded to it, and proofs do not model that implicit rounding: kernels compute in f32 between
// loads and stores, at least as precisely, and the float checks judge the difference. A cast
// that rounds to the dtype its readers compute in anyway (Llama's `weight * h.to(f16)`, a 16-bit
// composite's result) is that same rounding. A narrowing cast that a computation of another dtype
// reads (`f32(f16(x))`, `f16(x) * y` with y f32) changes what the program computes there, and
// proofs keep it. Only direct readers count: a value of the cast's dtype in between (a transpose
// at f16) is a 16-bit value like any other.
#pragma once
#include <vector>

#include "engine/ir/program.h"

namespace prism {

// Per value of `p`: whether it is a cast that rounds (narrows its operand's dtype, dtype.h) and
// that a value of another dtype reads.
std::vector<bool> rounding_casts(const Program& p);

}  // namespace prism
