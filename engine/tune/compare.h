// The numeric check before a timing counts: a kernel's outputs against the reference
// interpreter's, elementwise, with a tolerance for f32 computed in another order.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/interp/tensor.h"

namespace prism::tune {

struct Comparison {
  double max_error = 0;               // largest |got - want|
  std::optional<std::string> failure; // "output 0 differs at (3, 17): 1.25 vs 1.5 (tolerance 0.0001)"
};

// |got - want| <= rtol * |want| + atol * max|want| for every element; a NaN or an infinity passes
// only where the reference has the same (max|want| is over the finite values).
Comparison compare_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol = 1e-3,
                           double atol = 1e-4);

// The second chance of a 16-bit result that misses `want`, the reference at its dtype (which
// rounds every intermediate to 16 bits, as PyTorch eager does): a fused kernel keeps its
// intermediates in f32 and may be closer to the exact result than that reference is. `got`
// passes where it is at least as close to `exact` (the program computed at f32 on the same
// inputs) as `want` is, plus its own final rounding (`unit_roundoff` * |exact|: 2^-8 for bf16,
// 2^-11 for f16) and f32's tolerance (1e-3 relative, 1e-4 of max|exact|). One output each.
Comparison compare_no_worse(const Tensor& got, const Tensor& want, const Tensor& exact, double unit_roundoff);

// The edge suite's second chance (docs/tuning.md, "The edge suite"): on large inputs an output
// can be ill-conditioned (a softmax of logits in the thousands with two near ties), so that
// summing in another order moves it past the tolerance. `got` passes where
//   |got - exact| <= |want - exact| + (unit_roundoff + rtol) |exact| + atol max|exact| + 2 |moved - exact|:
// compare_no_worse's bound plus twice how far the exact result moves when its values move as
// rounding them differently may move them (`moved`: interpret_moved, every value by 2^-18 of
// itself and each 16-bit one by its unit roundoff), which is far below the tolerance wherever the
// output is well-conditioned.
// One output each.
Comparison compare_conditioned(const Tensor& got, const Tensor& want, const Tensor& exact, const Tensor& moved, double unit_roundoff,
                               double rtol, double atol);

// The edge suite's rule (docs/tuning.md, "The edge suite"): where the reference is not finite
// nothing is compared (a fully masked row's softmax is NaN there, and a kernel may give anything);
// where it is finite, a NaN or an infinity in `got` fails ("has 2048 NaN where the reference is
// finite (first at (0, 3))"). Returns that failure; else sets `got`, `want` and `exact` (when
// given) to 0 where the reference is not finite, for the tolerance check that follows.
std::optional<std::string> mask_non_finite_reference(Tensor& got, Tensor& want, Tensor* exact);

}  // namespace prism::tune
