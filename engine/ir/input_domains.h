// The domain each input of a program is drawn from (docs/tuning.md, "The edge suite"): its
// declared one (`var: f16[d] >= 0`), raised where the program needs more. A sqrt needs a
// non-negative operand, an rsqrt, a log and a divisor a positive one; the need passes back to an
// input only through ops that keep the sign: an add of non-negative values or constants, a mul
// or div by non-negative values or positive constants, a square, sqrt, sum, max, matmul or data
// movement. Where a need meets anything else (a sub, a neg, a signed activation) it is left
// unmet and no input is constrained for it. Inference BatchNorm's `sqrt(var + 1e-5)`: var >= 0.
//
// A value's sign is read forward from the inputs' domains: exp, sigmoid, rsqrt and rms are
// positive (rms is zero only on an all-zero row, which the edge suite checks on its own), a
// square, abs and relu non-negative, and a positive constant or a dim positive.
#pragma once
#include <vector>

#include "engine/ir/program.h"

namespace prism {

// One domain per input, in parameter order.
std::vector<Domain> input_domains(const Program& program);

}  // namespace prism
