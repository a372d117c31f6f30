// Helpers for the search tests: the example programs, lowered.
#pragma once
#include <stdexcept>
#include <map>
#include <string>
#include <vector>

#include "engine/ir/lower_composites.h"
#include "engine/lang/compile.h"
#include "engine/search/search.h"
#include "support/subprocess.h"

namespace prism::test {

inline std::string example_text(const std::string& name) { return read_example(name); }

inline Program lowered_example(const std::string& name) {
  CompileResult r = compile_text(example_text(name), name + ".prism");
  for (const auto& p : r.programs)
    if (p.name == name) return lower_composites(p);
  throw std::runtime_error("no program " + name);
}

inline Program lowered_text(const std::string& text, const std::string& name) {
  CompileResult r = compile_text(text, name + ".prism");
  for (const auto& p : r.programs)
    if (p.name == name) return lower_composites(p);
  throw std::runtime_error("no program " + name);
}

// Every example at one small binding: what the code generators' tests instantiate them at.
inline const std::map<std::string, DimBindings>& small_example_dims() {
  static const std::map<std::string, DimBindings> dims = {
      {"rms_linear", {{"n", 4}, {"d", 64}}},
      {"rmsnorm_mlp", {{"n", 4}, {"d", 64}}},
      {"gated_mlp", {{"n", 4}, {"d", 64}}},
      {"lora", {{"n", 4}, {"d", 64}, {"o", 128}, {"r", 8}}},
      {"attention", {{"B", 2}, {"q", 2}, {"s", 64}, {"e", 16}}},
      {"qk_norm_attention", {{"B", 2}, {"q", 2}, {"s", 64}, {"e", 16}}},
      {"gqa", {{"h", 2}, {"g", 2}, {"s", 64}, {"e", 16}}},
  };
  return dims;
}

// Llama's attention block as torch.compile gives it under CPU autocast at bf16 (python/prism/
// implicit_casts.py), at its sizes (2 x 16 tokens, 4 heads of 32; with symbolic sizes the search
// runs out of its budget): bf16 projections of the f32 RMSNorm, rotary at f32 (transformers' cos
// and sin), bf16 scores of the rotated q and k, a bf16 additive mask, o_proj.
inline const char* autocast_attention_text() {
  return "program autocast_llama_attention(x: f32[2, 16, 128], g: f32[128], wq: f32[128, 128], wk: f32[128, 128],\n"
         "                                 wv: f32[128, 128], wo: f32[128, 128], cos: f32[1, 1, 16, 32], sin: f32[1, 1, 16, 32],\n"
         "                                 mask: bf16[2, 1, 16, 16]) {\n"
         "  y = bf16(g * (x * rsqrt(mean(x ** 2, axis=-1, keepdims=true) + 1e-06)))\n"
         "  q = transpose(reshape(y @ bf16(wq).T, [2, 16, 4, 32]), perm=[0, 2, 1, 3])\n"
         "  k = transpose(reshape(y @ bf16(wk).T, [2, 16, 4, 32]), perm=[0, 2, 1, 3])\n"
         "  v = transpose(reshape(y @ bf16(wv).T, [2, 16, 4, 32]), perm=[0, 2, 1, 3])\n"
         "  q1, q2 = split(q, 2, axis=3)\n"
         "  k1, k2 = split(k, 2, axis=3)\n"
         "  qr = f32(q) * cos + f32(concat(neg(q2), q1, axis=-1)) * sin\n"
         "  kr = f32(k) * cos + f32(concat(neg(k2), k1, axis=-1)) * sin\n"
         "  scores = bf16(qr) @ bf16(kr).mT * 0.1767766952966369 + mask\n"
         "  a = softmax(scores, axis=-1) @ v\n"
         "  return reshape(transpose(a, perm=[0, 2, 1, 3]), [2, 16, 128]) @ bf16(wo).T\n"
         "}\n";
}

// BERT's attention block as torch.compile gives it under CPU autocast at bf16, at the same sizes:
// the f32 LayerNorm of the previous layer, bf16 projections with bf16 biases, a bf16 additive
// mask, the softmax as prism's importer writes scaled_dot_product_attention (each op at bf16),
// the dense output widened to f32 for the residual.
inline const char* autocast_bert_attention_text() {
  return "program autocast_bert_attention(x: f32[2, 16, 128], g: f32[128], beta: f32[128], wq: f32[128, 128], bq: f32[128],\n"
         "                                wk: f32[128, 128], bk: f32[128], wv: f32[128, 128], bv: f32[128],\n"
         "                                mask: f32[2, 1, 16, 16], wo: f32[128, 128], bo: f32[128]) {\n"
         "  y = layer_norm(x, eps=1e-12) * g + beta\n"
         "  q = transpose(reshape(bf16(y) @ bf16(wq).T + bf16(bq), [2, 16, 4, 32]), perm=[0, 2, 1, 3])\n"
         "  k = transpose(reshape(bf16(y) @ bf16(wk).T + bf16(bk), [2, 16, 4, 32]), perm=[0, 2, 1, 3])\n"
         "  v = transpose(reshape(bf16(y) @ bf16(wv).T + bf16(bv), [2, 16, 4, 32]), perm=[0, 2, 1, 3])\n"
         "  scores = q @ k.mT * 0.17677669529663687 + bf16(mask)\n"
         "  p = exp(scores - maximum(max(scores, axis=-1), -3.3895313892515355e+38))\n"
         "  a = p / maximum(sum(p, axis=-1), 1.1754943508222875e-38) @ v\n"
         "  o = reshape(transpose(a, perm=[0, 2, 1, 3]), [2, 16, 128]) @ bf16(wo).T + bf16(bo)\n"
         "  return f32(o) + y\n"
         "}\n";
}

// Layers as PyTorch models write them with tanh, sigmoid and abs: nn.GLU's sigmoid gate over two
// projections; a tanh MLP layer; an L1-normalized projection (F.normalize(p=1) without eps).
struct Layer {
  const char* name;
  const char* text;
  DimBindings small;  // what the code generators' tests instantiate it at
};
inline const std::vector<Layer>& activation_layers() {
  static const std::vector<Layer> layers = {
      {"glu", "program glu(X: f16[n, d], Wg: f16[d, d], Wu: f16[d, d]) {\n  return sigmoid(matmul(X, Wg)) * matmul(X, Wu)\n}\n",
       {{"n", 4}, {"d", 64}}},
      {"tanh_layer", "program tanh_layer(X: f16[n, d], W: f16[d, d]) {\n  return tanh(matmul(X, W))\n}\n", {{"n", 4}, {"d", 64}}},
      {"l1_linear", "program l1_linear(X: f16[n, d], W: f16[d, d]) {\n  return matmul(X / sum(abs(X), axis=-1), W)\n}\n",
       {{"n", 4}, {"d", 64}}},
  };
  return layers;
}

// Layers written with PyTorch's spellings (issue 49): nn.Linear's weight as W.T, erf, a leaky
// ReLU through where; and vectors computed before they broadcast: Gemma's RMSNorm gain (1 + G), an
// inference BatchNorm before an nn.Linear.
inline const std::vector<Layer>& spelled_layers() {
  static const std::vector<Layer> layers = {
      {"erf_linear", "program erf_linear(X: f32[n, d], W: f32[h, d]) {\n  return erf(X @ W.T) * 0.5\n}\n", {{"n", 4}, {"d", 64}, {"h", 32}}},
      {"gemma_rmsnorm_proj",
       "program gemma_rmsnorm_proj(X: f32[n, d], G: f32[d], W: f32[m, d]) {\n  return rms_norm(X, eps=1e-6) * (1 + G) @ W.T\n}\n",
       {{"n", 4}, {"d", 64}, {"m", 32}}},
      {"batchnorm_linear",
       "program batchnorm_linear(X: f32[n, d], mu: f32[d], var: f32[d], g: f32[d], b: f32[d], W: f32[m, d]) {\n"
       "  return ((X - mu) / sqrt(var + 1e-5) * g + b) @ W.T\n}\n",
       {{"n", 4}, {"d", 64}, {"m", 32}}},
      {"leaky_relu_linear", "program leaky_relu_linear(X: f32[n, d], W: f32[d, h]) {\n  Y = X @ W\n  return where(Y > 0, Y, 0.01 * Y)\n}\n",
       {{"n", 4}, {"d", 64}, {"h", 32}}},
  };
  return layers;
}

// The layers of examples/layers/ (written as PyTorch models write them), each at two small
// bindings the tests search, tune and check at. `finds`: the search finds a verified family.
struct ExampleLayer {
  const char* name;
  DimBindings small, second;
};
inline const std::vector<ExampleLayer>& example_layers() {
  static const std::vector<ExampleLayer> layers = {
      {"llama_rmsnorm_proj", {{"n", 4}, {"d", 64}, {"m", 32}}, {{"n", 8}, {"d", 128}, {"m", 64}}},
      {"swiglu_ffn", {{"n", 4}, {"d", 32}, {"h", 64}}, {{"n", 8}, {"d", 64}, {"h", 96}}},
      {"gpt2_mlp_fc", {{"n", 4}, {"d", 32}, {"h", 64}}, {{"n", 8}, {"d", 64}, {"h", 128}}},
      {"layernorm_linear", {{"n", 4}, {"d", 64}, {"m", 32}}, {{"n", 8}, {"d", 128}, {"m", 64}}},
      {"sdpa", {{"B", 2}, {"q", 4}, {"s", 64}, {"e", 16}}, {{"B", 4}, {"q", 1}, {"s", 128}, {"e", 32}}},
      {"causal_sdpa", {{"B", 2}, {"q", 16}, {"s", 64}, {"e", 16}}, {{"B", 2}, {"q", 64}, {"s", 64}, {"e", 16}}},
      {"gqa_decode", {{"h", 2}, {"g", 4}, {"s", 64}, {"e", 16}}, {{"h", 2}, {"g", 8}, {"s", 128}, {"e", 32}}},
      {"lora_linear", {{"n", 4}, {"d", 64}, {"m", 32}, {"r", 4}}, {{"n", 8}, {"d", 128}, {"m", 64}, {"r", 16}}},
      {"bias_residual", {{"n", 4}, {"d", 64}}, {{"n", 8}, {"d", 128}}},
      {"log_softmax", {{"n", 4}, {"v", 64}}, {{"n", 8}, {"v", 256}}},
      {"safe_softmax", {{"n", 4}, {"s", 64}}, {{"n", 8}, {"s", 256}}},
      {"gelu_linear", {{"n", 4}, {"d", 32}, {"h", 64}}, {{"n", 8}, {"d", 64}, {"h", 128}}},
      {"residual_rmsnorm", {{"n", 4}, {"d", 64}}, {{"n", 8}, {"d", 128}}},
      {"qknorm_attention", {{"B", 2}, {"q", 4}, {"s", 64}, {"e", 16}}, {{"B", 2}, {"q", 1}, {"s", 128}, {"e", 32}}},
      {"rotary", {{"h", 2}, {"s", 8}, {"e", 16}}, {{"h", 4}, {"s", 16}, {"e", 64}}},
      {"groupnorm_stats", {{"N", 2}, {"G", 2}, {"k", 64}}, {{"N", 1}, {"G", 4}, {"k", 256}}},
      {"llama_attention", {{"n", 2}, {"d", 32}, {"h", 2}, {"e", 8}, {"s", 16}}, {{"n", 8}, {"d", 64}, {"h", 4}, {"e", 16}, {"s", 8}}},
      {"llama_mlp_block", {{"n", 4}, {"d", 32}, {"f", 64}}, {{"n", 8}, {"d", 64}, {"f", 96}}},
  };
  return layers;
}

inline std::string layer_text(const std::string& name) { return example_text("layers/" + name); }

// `text` (a program or a family) with every tensor declared `from` declared `to` (a layer stored
// at another dtype): "f16[" becomes "bf16[".
inline std::string retyped(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from + "[", at)) != std::string::npos; at += to.size()) text.replace(at, from.size(), to);
  return text;
}

inline const ExampleLayer& example_layer(const std::string& name) {
  for (const ExampleLayer& layer : example_layers())
    if (layer.name == name) return layer;
  throw std::invalid_argument("no example layer '" + name + "'");
}

}  // namespace prism::test
