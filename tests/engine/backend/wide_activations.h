// 16-bit layers on activations whose 16-bit sum of squares overflows (std 30 over 256 columns:
// a row's sum of squares is about 230,000, past f16's 65504), as a transformer's residual stream
// has them: what the code generators must compute with f32 statistics, like the reference.
#pragma once
#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/interp/half.h"
#include "engine/interp/interpreter.h"
#include "../search/search_helpers.h"

namespace prism::test {

struct WideLayer {
  const char* name;
  const char* text;
};

// Llama's RMSNorm written with its upcast and a projection stored as nn.Linear stores it; the
// rms_norm composite with a gain; LayerNorm with weight and bias. All f16.
inline const std::vector<WideLayer>& wide_layers() {
  static const std::vector<WideLayer> layers = {
      {"llama_upcast_proj",
       "program llama_upcast_proj(X: f16[n, d], g: f16[d], W: f16[m, d]) {\n  h = f32(X)\n  v = mean(h * h, axis=-1)\n"
       "  Y = g * f16(h / sqrt(v + 1e-6))\n  return matmul(Y, transpose(W))\n}\n"},
      {"rms_gain", "program rms_gain(X: f16[n, d], g: f16[d]) {\n  return rms_norm(X, eps=1e-6) * g\n}\n"},
      {"layernorm_affine", "program layernorm_affine(X: f16[n, d], g: f16[d], b: f16[d]) {\n  return layer_norm(X, eps=1e-5) * g + b\n}\n"},
  };
  return layers;
}

inline const DimBindings& wide_dims() {
  static const DimBindings dims{{"n", 4}, {"d", 256}, {"m", 32}};
  return dims;
}

// X of std 30 with an outlier of 600 every 97th value; the other inputs seeded in [-1, 1].
inline std::map<std::string, Tensor> wide_inputs(const Program& lowered, uint64_t seed = 5) {
  std::map<std::string, Tensor> named;
  random_inputs(lowered, wide_dims(), seed, &named);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 30);
  Tensor& x = named.at("X");
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = round_to(x.dtype, float(i % 97 == 5 ? 600.0 : normal(rng)));
  return named;
}

}  // namespace prism::test
