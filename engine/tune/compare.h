// The numeric check before a timing counts: a kernel's outputs against the reference
// interpreter's, elementwise, with a tolerance for f32 computed in another order.
#pragma once
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

}  // namespace prism::tune
