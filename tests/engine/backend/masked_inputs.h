// Inputs as a decoder passes them to examples/layers/causal_sdpa.prism: an additive causal mask
// of -inf, so that wherever a kernel cuts a row of scores into pieces, some pieces are all -inf.
#pragma once
#include <cmath>
#include <map>
#include <string>

#include "engine/interp/interpreter.h"
#include "engine/sgraph/sgraph.h"
#include "../search/search_helpers.h"

namespace prism::test {

// Q, K, V seeded; M[i, j] = -inf for a key j after query i (masked_fill(mask, float("-inf"))), else
// 0; with `whole_row`, query 0 sees no key at all (its row of M all -inf).
inline std::map<std::string, Tensor> causal_inputs(const DimBindings& dims, bool whole_row, uint64_t seed = 3) {
  const Program p = lowered_text(layer_text("causal_sdpa"), "causal_sdpa");
  std::map<std::string, Tensor> named;
  random_inputs(p, dims, seed, &named);
  Tensor& m = named.at("M");
  const int64_t q = dims.at("q"), s = dims.at("s");
  for (int64_t i = 0; i < q; ++i)
    for (int64_t j = 0; j < s; ++j) m.data[size_t(i * s + j)] = j > i || (whole_row && i == 0) ? -INFINITY : 0.0f;
  return named;
}

// The reference interpreter's result for causal_sdpa on `inputs` (NaN on a row masked whole,
// as PyTorch's softmax gives).
inline Tensor causal_reference(const DimBindings& dims, const std::map<std::string, Tensor>& inputs) {
  return interpret(lowered_text(layer_text("causal_sdpa"), "causal_sdpa"), dims, inputs).at(0);
}

// The family's inputs out of `named` (the graph reads the program's inputs by name).
inline std::map<std::string, Tensor> graph_inputs(const sgraph::SGraph& g, const std::map<std::string, Tensor>& named) {
  std::map<std::string, Tensor> out;
  for (const auto& in : g.inputs) out[in.name] = named.at(in.name);
  return out;
}

}  // namespace prism::test
