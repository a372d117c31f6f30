// Rewrites a sum of squared deviations from the mean into its one-pass form:
//
//   sum((x - m) * (x - m), axis=a)  =  sum(x * x, axis=a) - k * m * m      m = sum(x, axis=a) / k,
//                                                                          k = the size of axis a
//
// (exact in real arithmetic: sum((x - m)^2) = sum(x^2) - 2 m sum(x) + k m^2 and sum(x) = k m).
// Layernorm's variance then reads x, not x - m: its sum of squares no longer waits for the mean,
// so one loop over the row can accumulate both sums, and a row split over blocks can combine
// both partials in one second kernel. Numerically it is the weaker form (it cancels when the
// mean is large against the spread): the search offers it only where the floating-point check
// on mean-shifted rows still passes (NumericCheck::unstable; docs/design.md, "Numerics").
#pragma once
#include <optional>

#include "engine/ir/program.h"

namespace prism {

// `lowered`: a program with primitives only (lower_composites; mean is sum / k there). None
// when no sum has that form.
std::optional<Program> one_pass_variance(const Program& lowered);

}  // namespace prism
