// Helpers for the sGraph tests: reference results, random inputs, numeric comparison.
#pragma once
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "../interp_helpers.h"
#include "engine/sgraph/evaluate.h"
#include "engine/sgraph/parse.h"

namespace prism::test {

// Random inputs for every graph input, shaped by the bindings.
inline std::map<std::string, Tensor> random_inputs(const sgraph::SGraph& g, const DimBindings& dims, uint64_t seed) {
  std::map<std::string, Tensor> out;
  for (const auto& in : g.inputs) out[in.name] = random_tensor(in.type.dtype, concrete_shape(in.type.shape, dims), seed, in.name);
  return out;
}

// max |a - b| / max(1, max |b|); infinity when the shapes differ, or a NaN stands where the
// other has a number (NaN where both have one agrees: log of a negative input, say).
inline double relative_error(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape) return INFINITY;
  double diff = 0, scale = 1;
  for (size_t i = 0; i < a.data.size(); ++i) {
    if (std::isnan(a.data[i]) || std::isnan(b.data[i])) {
      if (std::isnan(a.data[i]) != std::isnan(b.data[i])) return INFINITY;
      continue;
    }
    diff = std::max(diff, double(std::fabs(a.data[i] - b.data[i])));
    scale = std::max(scale, double(std::fabs(b.data[i])));
  }
  return diff / scale;
}

// The family's output 0 evaluated for (dims, sizes) and the program's reference on the same inputs.
inline double family_error(const std::string& program, const std::string& family, const DimBindings& dims, const DimBindings& sizes,
                           uint64_t seed = 7, sgraph::TileBudget target = {}) {
  sgraph::SGraph g = sgraph::parse(family);
  sgraph::Instance inst = sgraph::instantiate(g, dims, sizes, target);
  auto inputs = random_inputs(g, dims, seed);
  Tensor got = sgraph::evaluate(inst, inputs).at(0);
  Tensor want = run_text(program, dims, inputs).at(0);
  return relative_error(got, want);
}

}  // namespace prism::test
