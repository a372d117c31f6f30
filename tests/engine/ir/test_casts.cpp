// Casts (f32(x), f16(x), bf16(x)) and 16-bit statistics as PyTorch keeps them: the language, shapes,
// printing, the lowering of composites, the reference interpreter on activations that overflow a
// 16-bit sum, the search's view of a program without its casts, and proofs that keep them.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "../compile_helpers.h"
#include "../interp_helpers.h"
#include "engine/egraph/equivalence.h"
#include "engine/interp/half.h"
#include "engine/ir/drop_casts.h"
#include "engine/ir/lower_composites.h"
#include "engine/ir/print.h"
#include "engine/search/search.h"
#include "engine/workspace/workspace.h"

using namespace prism;

namespace {

// Llama's RMSNorm as its modeling code writes it: upcast, statistics in f32, the normalized row
// rounded back before the gain multiplies it.
const char* kLlamaUpcast = R"(program llama_norm(X: f16[n, d], g: f16[d]) {
  h = f32(X)
  v = mean(h * h, axis=-1)
  return g * f16(h / sqrt(v + 1e-6))
}
)";

int count_op(const Program& p, Op op) {
  int n = 0;
  for (const Value& v : p.values) n += v.op == op;
  return n;
}

// Activations as a transformer's residual stream has them: normal with standard deviation `std`,
// every 97th value an outlier of 40 std (clipped to the f16 range), stored at f16.
Tensor activations(int64_t n, int64_t d, double std, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, std);
  Tensor t = Tensor::zeros(DType::F16, {n, d});
  for (size_t i = 0; i < t.data.size(); ++i) {
    double x = i % 97 == 5 ? 40 * std * (i % 2 ? 1 : -1) : normal(rng);
    t.data[i] = round_to(DType::F16, float(std::clamp(x, -60000.0, 60000.0)));
  }
  return t;
}

// The largest |got - want| over the elements, in units of want's f16 spacing (1 ulp: rounded the
// other way); infinity for a non-finite value where want is finite.
double f16_ulps(const Tensor& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got.data[i])) return INFINITY;
    const double ulp = std::ldexp(1.0, std::max(-24, std::ilogb(std::max(std::fabs(want[i]), 6.1e-5)) - 10));
    worst = std::max(worst, std::fabs(got.data[i] - want[i]) / ulp);
  }
  return worst;
}

// f64 references, row by row over the last axis of an [n, d] tensor.
std::vector<double> rms_norm_f64(const Tensor& x, int64_t d, double eps) {
  std::vector<double> out(x.data.size());
  for (size_t r = 0; r < x.data.size() / size_t(d); ++r) {
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) ss += double(x.data[r * size_t(d) + size_t(j)]) * x.data[r * size_t(d) + size_t(j)];
    const double scale = 1 / std::sqrt(ss / double(d) + eps);
    for (int64_t j = 0; j < d; ++j) out[r * size_t(d) + size_t(j)] = x.data[r * size_t(d) + size_t(j)] * scale;
  }
  return out;
}

std::vector<double> layer_norm_f64(const Tensor& x, int64_t d, double eps) {
  std::vector<double> out(x.data.size());
  for (size_t r = 0; r < x.data.size() / size_t(d); ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < d; ++j) mean += x.data[r * size_t(d) + size_t(j)];
    mean /= double(d);
    for (int64_t j = 0; j < d; ++j) var += std::pow(x.data[r * size_t(d) + size_t(j)] - mean, 2);
    const double scale = 1 / std::sqrt(var / double(d) + eps);
    for (int64_t j = 0; j < d; ++j) out[r * size_t(d) + size_t(j)] = (x.data[r * size_t(d) + size_t(j)] - mean) * scale;
  }
  return out;
}

}  // namespace

TEST_CASE("casts: f32(x), f16(x), bf16(x) parse, type and print back", "[casts][lang]") {
  const Program p = test::only_program(kLlamaUpcast);
  REQUIRE(count_op(p, Op::Cast) == 2);
  for (const Value& v : p.values)
    if (v.op == Op::Cast) CHECK(v.type.dtype == (v.name == "h" ? DType::F32 : DType::F16));
  // A binary op of an f32 value and an f16 one is f32; the gain times the f16 row is f16.
  CHECK(p.value(p.outputs[0]).type.dtype == DType::F16);
  const std::string printed = print_program(p);
  CHECK(printed.find("h = f32(X)  # f32[n, d]") != std::string::npos);
  CHECK(printed.find("f16(") != std::string::npos);
  CHECK(print_program(test::only_program(printed)) == printed);

  const Program b = test::only_program("program p(X: f32[n]) {\n  return bf16(X) * 2\n}\n");
  CHECK(b.value(b.outputs[0]).type.dtype == DType::BF16);  // a weak constant does not widen it
  CHECK(test::diag_lines("program p(X: f32[n]) {\n  return f16(X, X)\n}\n").find("f16: too many arguments") != std::string::npos);
  CHECK(test::diag_lines("program p(X: f32[n]) {\n  return fp16(X)\n}\n").find("did you mean 'f16'?") != std::string::npos);
}

TEST_CASE("casts: a 16-bit composite keeps its statistics in f32 and rounds only its result", "[casts][lower]") {
  for (const char* call : {"rms_norm(X, eps=1e-6)", "rms_norm(X)", "layer_norm(X)", "softmax(X)", "mean(X, axis=-1)"}) {
    INFO(call);
    const Program p = lower_composites(test::only_program(std::string("program p(X: f16[n, d]) {\n  return ") + call + "\n}\n"));
    CHECK(count_op(p, Op::Cast) == 2);
    for (const Value& v : p.values) {
      if (v.op == Op::Input) continue;
      const bool result = v.id == p.outputs[0];
      CHECK(v.type.dtype == (result ? DType::F16 : DType::F32));
    }
    const Program f32 = lower_composites(test::only_program(std::string("program p(X: f32[n, d]) {\n  return ") + call + "\n}\n"));
    CHECK(count_op(f32, Op::Cast) == 0);
  }
}

TEST_CASE("casts: f16 RMSNorm and LayerNorm match f64 on activations up to the f16 range", "[casts][interp]") {
  const int64_t n = 4, d = 4096;
  for (double std : {4.5, 100.0, 1000.0}) {
    INFO("std " << std);
    const Tensor x = activations(n, d, std, 11);
    const DimBindings dims{{"n", n}, {"d", d}};
    const Tensor rms = test::run1("X: f16[n, d]", "rms_norm(X, eps=1e-6)", dims, x);
    CHECK(f16_ulps(rms, rms_norm_f64(x, d, 1e-6)) <= 1);
    const Tensor ln = test::run1("X: f16[n, d]", "layer_norm(X, eps=1e-5)", dims, x);
    CHECK(f16_ulps(ln, layer_norm_f64(x, d, 1e-5)) <= 1);
    // Llama's upcast, written out, with a gain of ones: the same as rms_norm.
    Tensor ones = Tensor::zeros(DType::F16, {d});
    for (float& v : ones.data) v = 1;
    const Tensor llama = test::run_text(kLlamaUpcast, dims, {{"X", x}, {"g", ones}}).at(0);
    CHECK(f16_ulps(llama, rms_norm_f64(x, d, 1e-6)) <= 1);
  }
  // Before: the sum of squares rounded to f16 overflowed (65504) and every output was 0.
  const Tensor big = activations(n, d, 4.5, 3);
  double sum_sq = 0;
  for (float v : big.data) sum_sq += double(v) * v;
  REQUIRE(sum_sq / double(n) > 65504);
}

TEST_CASE("casts: LayerNorm matches f64 on rows with a large mean and a small spread", "[casts][interp][numerics]") {
  // A residual stream with a DC offset: the mean the dtype still resolves a spread of 1 beside.
  // One centring left the f32 row's mean off by the rounding of a 2.7e8 sum: about 1% of the
  // spread in every output (docs/design.md, "Numerics").
  const int64_t n = 4, d = 4096;
  const DimBindings dims{{"n", n}, {"d", d}};
  struct Case {
    DType dtype;
    const char* name;
    float mean;
    double tolerance;  // relative to the output's largest magnitude
  };
  for (const Case& c : {Case{DType::F32, "f32", 65536, 1e-5}, Case{DType::F16, "f16", 16, 1e-3}, Case{DType::BF16, "bf16", 2, 8e-3}}) {
    INFO(c.name);
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<float> spread(-1, 1);
    Tensor x = Tensor::zeros(c.dtype, {n, d});
    for (float& v : x.data) v = round_to(c.dtype, c.mean + spread(rng));
    const Tensor ln = test::run1(std::string("X: ") + c.name + "[n, d]", "layer_norm(X, eps=1e-5)", dims, x);
    const std::vector<double> want = layer_norm_f64(x, d, 1e-5);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::fabs(ln.data[i] - want[i]));
      scale = std::max(scale, std::fabs(want[i]));
    }
    CHECK(worst / scale <= c.tolerance);
  }
}

TEST_CASE("casts: f16 mean and softmax accumulate in f32", "[casts][interp]") {
  const int64_t n = 2, d = 4096;
  Tensor x = Tensor::zeros(DType::F16, {n, d});
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = round_to(DType::F16, 30.0f + float(i % 7));  // a row sums to 135k
  const Tensor mean = test::run1("X: f16[n, d]", "mean(X, axis=-1)", {{"n", n}, {"d", d}}, x);
  for (float m : mean.data) CHECK(m == Approx(32.99).epsilon(2e-3));
  const Tensor soft = test::run1("X: f16[n, d]", "softmax(X)", {{"n", n}, {"d", d}}, x);
  double total = 0;
  for (int64_t j = 0; j < d; ++j) total += soft.data[size_t(j)];
  CHECK(total == Approx(1).epsilon(1e-2));
}

TEST_CASE("casts: the search sees the program without casts, each stored value at the dtype the program rounds it to", "[casts][search]") {
  const Program lowered = lower_composites(test::only_program(kLlamaUpcast));
  const Program p = drop_casts(lowered);
  CHECK(count_op(p, Op::Cast) == 0);
  for (const Value& v : p.values) {
    if (v.op == Op::Div && v.type.shape.size() == 2 && v.type.shape[1] == Dim::symbol("d")) CHECK(v.type.dtype == DType::F16);  // f16(h / …)
    if (v.op == Op::Sum) CHECK(v.type.dtype == DType::F32);  // the statistic stays f32
  }
  CHECK(p.value(p.outputs[0]).type.dtype == DType::F16);
  // A returned cast whose operand cannot take its dtype stays: the output keeps the program's.
  for (const char* text : {"program p(X: f16[n]) {\n  return f32(X)\n}\n", "program p(X: f32[n]) {\n  Y = X * 2\n  return f16(Y), Y\n}\n"}) {
    const Program q = drop_casts(lower_composites(test::only_program(text)));
    CHECK(count_op(q, Op::Cast) == 1);
    CHECK(q.value(q.outputs[0]).op == Op::Cast);
  }
  // The search says why it finds nothing for such a program.
  SearchLimits limits;
  limits.fast_memory_bytes = 1 << 20;
  const SearchResult r = search::search_program(lower_composites(test::only_program("program p(X: f32[n]) {\n  Y = X * 2\n  return f16(Y), Y\n}\n")), limits);
  CHECK(r.candidates.empty());
  CHECK(r.stats.empty_reason.find("returns f16(Y) of a value the program also has at f32") != std::string::npos);
  // No cast: the program itself.
  const Program plain = lower_composites(test::only_program("program p(X: f32[n, d]) {\n  return rms_norm(X)\n}\n"));
  CHECK(print_program(drop_casts(plain)) == print_program(plain));
}

// Phi-3's fused qkv_proj under autocast: one bf16 projection split into query, key and value,
// the second half of the first split unread. Dropping the casts dropped that part too, and the
// search, reading a split's parts as consecutive values, stopped with an internal error
// ("vector::_M_range_check"): the attention block stayed PyTorch's.
TEST_CASE("casts: dropping them keeps every part of a split one part of which is read", "[casts][search]") {
  const char* text =
      "program qkv(x: f32[n, d], w: f32[o, d]) {\n"
      "  y = bf16(x) @ bf16(w).T\n"
      "  q, rest = split(y, 2, axis=1)\n"
      "  k0, k1, k, v = split(y, 4, axis=1)\n"
      "  return q, k, v\n"
      "}\n";
  const Program p = drop_casts(lower_composites(test::only_program(text)));
  CHECK(count_op(p, Op::Cast) == 0);
  CHECK(count_op(p, Op::Split) == 6);
  for (const Value& v : p.values)
    if (v.op == Op::Split) CHECK(p.value(v.id - v.attrs.index).attrs.index == 0);
  CHECK(print_program(p).find("q, rest = split(") != std::string::npos);
  SearchLimits limits;
  limits.fast_memory_bytes = 1 << 20;
  const SearchResult r = search::search_program(lower_composites(test::only_program(text)), limits);
  CHECK_FALSE(r.candidates.empty());
}

TEST_CASE("casts: proofs keep a rounding a wider computation reads and see through the others", "[casts][egraph]") {
  Workspace ws;
  ws.open("file:///casts.prism", kLlamaUpcast, 1);
  EquivLimits limits;
  // Rounding the normalized row to f16 where Llama does: written out, as the 16-bit composite
  // lowers (statistics in f32, the row rounded before the gain), or an f16 row widened for the
  // gain (a 16-bit value widens exactly).
  for (const char* other : {"g * f16(rms_norm(f32(X), eps=1e-6))", "rms_norm(X, eps=1e-6) * g", "f32(g) * f32(X / sqrt(mean(X * X, axis=-1) + 1e-6))"}) {
    EquivResult r = ws.equivalent("llama_norm", other, limits);
    INFO(other << ": " << verdict_name(r.verdict) << " " << r.message);
    CHECK(r.verdict == EquivResult::Verdict::Proved);
  }
  // All in f16: every value rounds to f16 implicitly, as Llama's cast rounds its row to the dtype
  // the gain multiplies in; proofs leave implicit rounding to the float checks.
  CHECK(ws.equivalent("llama_norm", "g * (X / sqrt(mean(X * X, axis=-1) + 1e-6))", limits).verdict == EquivResult::Verdict::Proved);
  limits.time_limit_s = 2;
  CHECK(ws.equivalent("llama_norm", "g * (X / sqrt(mean(X * X, axis=-1) + 1e-5))", limits).verdict != EquivResult::Verdict::Proved);
  // The f32 row rounded to f16 and multiplied in f32: a rounding inside a wider computation, kept.
  CHECK(ws.equivalent("llama_norm", "f32(g) * f32(f16(f32(X) / sqrt(mean(f32(X) * f32(X), axis=-1) + 1e-6)))", limits).verdict != EquivResult::Verdict::Proved);
}
