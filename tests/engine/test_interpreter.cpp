#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "engine/interp/footprint.h"
#include "engine/interp/half.h"
#include "interp_helpers.h"

using namespace prism;
using namespace prism::test;
using Catch::Matchers::WithinAbs;

namespace {
void check_values(const Tensor& t, std::vector<int64_t> shape, std::vector<float> want, float tol = 1e-6f) {
  CHECK(t.shape == shape);
  REQUIRE(t.data.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK_THAT(t.data[i], WithinAbs(want[i], tol));
}
}  // namespace

TEST_CASE("elementwise unary ops", "[engine][interp]") {
  Tensor x = f32({4}, {-1.0f, 0.0f, 1.0f, 4.0f});
  DimBindings b{{"n", 4}};
  check_values(run1("X: f32[n]", "-X", b, x), {4}, {1, 0, -1, -4});
  check_values(run1("X: f32[n]", "exp(X)", b, x), {4}, {0.36787944f, 1.0f, 2.7182817f, 54.59815f}, 1e-4f);
  check_values(run1("X: f32[n]", "square(X)", b, x), {4}, {1, 0, 1, 16});
  check_values(run1("X: f32[n]", "relu(X)", b, x), {4}, {0, 0, 1, 4});
  check_values(run1("X: f32[n]", "silu(X)", b, x), {4}, {-0.26894142f, 0.0f, 0.7310586f, 3.928055f});
  check_values(run1("X: f32[n]", "gelu(X)", b, x), {4}, {-0.15865526f, 0.0f, 0.8413447f, 3.9998732f});
  Tensor p = f32({3}, {1.0f, 4.0f, 0.25f});
  DimBindings b3{{"n", 3}};
  check_values(run1("X: f32[n]", "sqrt(X)", b3, p), {3}, {1, 2, 0.5f});
  check_values(run1("X: f32[n]", "rsqrt(X)", b3, p), {3}, {1, 0.5f, 2});
  check_values(run1("X: f32[n]", "log(X)", b3, p), {3}, {0.0f, 1.3862944f, -1.3862944f});
}

TEST_CASE("binary ops broadcast like numpy", "[engine][interp]") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  std::string prog = "program p(A: f32[m, n], B: f32[n]) {\n  return A + B, A - B, A * B, A / B\n}\n";
  auto outs = run_text(prog, {{"m", 2}, {"n", 3}}, {{"A", a}, {"B", f32({3}, {10, 20, 40})}});
  check_values(outs[0], {2, 3}, {11, 22, 43, 14, 25, 46});
  check_values(outs[1], {2, 3}, {-9, -18, -37, -6, -15, -34});
  check_values(outs[2], {2, 3}, {10, 40, 120, 40, 100, 240});
  check_values(outs[3], {2, 3}, {0.1f, 0.1f, 0.075f, 0.4f, 0.25f, 0.15f});
  // [2, 1] * [1, 3] -> [2, 3]
  auto outer = run_text("program p(A: f32[m, 1], B: f32[1, n]) {\n  return A * B\n}\n", {{"m", 2}, {"n", 3}},
                        {{"A", f32({2, 1}, {2, 3})}, {"B", f32({1, 3}, {1, 10, 100})}});
  check_values(outer[0], {2, 3}, {2, 20, 200, 3, 30, 300});
  // scalar constants and symbolic constants
  check_values(run1("X: f32[n, d]", "X * 2 - 0.5 + d", {{"n", 1}, {"d", 4}}, f32({1, 4}, {0, 1, 2, 3})), {1, 4}, {3.5f, 5.5f, 7.5f, 9.5f});
}

TEST_CASE("comparisons, where, clamp, minimum, maximum, pow and erf as PyTorch computes them", "[engine][interp][spellings]") {
  const float inf = INFINITY, nan = NAN;
  Tensor x = f32({5}, {-2.0f, 0.0f, 0.5f, inf, nan});
  DimBindings b{{"n", 5}};
  // A comparison with NaN is false (0), as in C and PyTorch.
  check_values(run1("X: f32[n]", "(X > 0) + 10 * (X <= 0) + 100 * (X == 0) + 1000 * (X != 0)", b, x), {5},
               {1010, 110, 1001, 1001, 1000});
  // where selects: the branch not taken, -inf or NaN, never reaches the result.
  check_values(run1("X: f32[n]", "where(X > 0, X, -inf)", b, x), {5}, {-inf, -inf, 0.5f, inf, -inf});
  CHECK(std::isnan(run1("X: f32[n]", "where(X == X, 1, X)", b, x).data[4]));
  check_values(run1("X: f32[n]", "where(X != X, 0, X) * 2", b, x), {5}, {-4, 0, 1, inf, 0});
  // clamp, minimum and maximum keep NaN (fminf and fmaxf would drop it).
  Tensor c = run1("X: f32[n]", "clamp(X, min=-1, max=1)", b, x);
  check_values(Tensor{c.dtype, {4}, {c.data.begin(), c.data.begin() + 4}}, {4}, {-1, 0, 0.5f, 1});
  CHECK(std::isnan(c.data[4]));
  CHECK(std::isnan(run1("X: f32[n]", "maximum(X, 0)", b, x).data[4]));
  CHECK(std::isnan(run1("X: f32[n]", "minimum(0, X)", b, x).data[4]));
  Tensor p = f32({3}, {0.25f, 2.0f, 3.0f});
  DimBindings b3{{"n", 3}};
  check_values(run1("X: f32[n]", "X ** 2 + X ** -1", b3, p), {3}, {4.0625f, 4.5f, 9.3333333f}, 1e-5f);
  check_values(run1("X: f32[n]", "X ** 1.5", b3, p), {3}, {0.125f, 2.8284271f, 5.1961524f}, 1e-5f);
  check_values(run1("X: f32[n]", "erf(X)", b3, p), {3}, {0.27632639f, 0.99532227f, 0.99997791f}, 1e-6f);
}

TEST_CASE("a softmax under a where(mask, x, -inf) mask: masked weights 0, a row masked whole NaN", "[engine][interp][spellings][masked]") {
  const std::string prog = "program p(X: f32[n, s], M: f32[n, s]) {\n  return softmax(where(M > 0, X, -inf), dim=-1)\n}\n";
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6}), m = f32({2, 3}, {1, 0, 1, 0, 0, 0});
  Tensor out = run_text(prog, {{"n", 2}, {"s", 3}}, {{"X", x}, {"M", m}}).at(0);
  const float e = std::exp(2.0f);
  check_values(Tensor{out.dtype, {3}, {out.data.begin(), out.data.begin() + 3}}, {3}, {1 / (1 + e), 0, e / (1 + e)});
  for (size_t i = 3; i < 6; ++i) CHECK(std::isnan(out.data[i]));
}

TEST_CASE("reductions over any axis, keepdims by default", "[engine][interp]") {
  Tensor x = f32({2, 3}, {1, 2, 3, -4, 5, 6});
  DimBindings b{{"n", 2}, {"d", 3}};
  check_values(run1("X: f32[n, d]", "sum(X)", b, x), {2, 1}, {6, 7});
  check_values(run1("X: f32[n, d]", "sum(X, axis=0)", b, x), {1, 3}, {-3, 7, 9});
  check_values(run1("X: f32[n, d]", "sum(X, axis=-2, keepdims=false)", b, x), {3}, {-3, 7, 9});
  check_values(run1("X: f32[n, d]", "max(X, axis=-1)", b, x), {2, 1}, {3, 6});
  check_values(run1("X: f32[n, d]", "max(X, axis=0, keepdims=false)", b, x), {3}, {1, 5, 6});
  check_values(run1("X: f32[n, d]", "rms(X)", b, x), {2, 1}, {std::sqrt(14.0f / 3), std::sqrt(77.0f / 3)});
  check_values(run1("X: f32[n, d]", "mean(X, axis=0)", b, x), {1, 3}, {-1.5f, 3.5f, 4.5f});
  check_values(run1("X: f32[n, d]", "X / sum(X, axis=-1)", b, x), {2, 3}, {1 / 6.f, 2 / 6.f, 3 / 6.f, -4 / 7.f, 5 / 7.f, 6 / 7.f});
  // rank 3, middle axis
  Tensor y = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  check_values(run1("X: f32[a, b, c]", "sum(X, axis=1)", {{"a", 2}, {"b", 2}, {"c", 2}}, y), {2, 1, 2}, {4, 6, 12, 14});
}

TEST_CASE("composites compute their definitions", "[engine][interp]") {
  Tensor x = f32({1, 4}, {1, 2, 3, 4});
  DimBindings b{{"n", 1}, {"d", 4}};
  float rms = std::sqrt(30.0f / 4);
  check_values(run1("X: f32[n, d]", "rms_norm(X)", b, x), {1, 4}, {1 / rms, 2 / rms, 3 / rms, 4 / rms});
  float rms_eps = std::sqrt(30.0f / 4 + 0.5f);
  check_values(run1("X: f32[n, d]", "rms_norm(X, eps=0.5)", b, x), {1, 4}, {1 / rms_eps, 2 / rms_eps, 3 / rms_eps, 4 / rms_eps});
  float z = std::exp(1.f) + std::exp(2.f) + std::exp(3.f) + std::exp(4.f);
  check_values(run1("X: f32[n, d]", "softmax(X)", b, x), {1, 4}, {std::exp(1.f) / z, std::exp(2.f) / z, std::exp(3.f) / z, std::exp(4.f) / z});
  check_values(run1("X: f32[n, d]", "mean(X, keepdims=false)", b, x), {1}, {2.5f});
}

TEST_CASE("matmul, plain and batched with broadcast batch dims", "[engine][interp]") {
  auto out = run_text("program p(A: f32[m, k], B: f32[k, n]) {\n  return A @ B\n}\n", {{"m", 2}, {"k", 3}, {"n", 2}},
                      {{"A", f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"B", f32({3, 2}, {7, 8, 9, 10, 11, 12})}});
  check_values(out[0], {2, 2}, {58, 64, 139, 154});
  // A[2, 1, 1, 2] @ B[3, 2, 1] -> [2, 3, 1, 1]
  auto batched = run_text("program p(A: f32[b, 1, 1, k], B: f32[h, k, 1]) {\n  return matmul(A, B)\n}\n", {{"b", 2}, {"h", 3}, {"k", 2}},
                          {{"A", f32({2, 1, 1, 2}, {1, 2, 3, 4})}, {"B", f32({3, 2, 1}, {1, 0, 0, 1, 1, 1})}});
  check_values(batched[0], {2, 3, 1, 1}, {1, 2, 3, 3, 4, 7});
}

TEST_CASE("data movement: transpose, reshape, concat, split", "[engine][interp]") {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  DimBindings b{{"n", 2}, {"d", 3}};
  check_values(run1("X: f32[n, d]", "transpose(X)", b, x), {3, 2}, {1, 4, 2, 5, 3, 6});
  check_values(run1("X: f32[n, d]", "reshape(X, [d, n])", b, x), {3, 2}, {1, 2, 3, 4, 5, 6});
  check_values(run1("X: f32[n, d]", "concat(X, X * 10, axis=0)", b, x), {4, 3}, {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60});
  check_values(run1("X: f32[n, d]", "concat(X, -X, axis=-1)", b, x), {2, 6}, {1, 2, 3, -1, -2, -3, 4, 5, 6, -4, -5, -6});
  Tensor y = f32({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  check_values(run1("X: f32[a, b, c]", "transpose(X, perm=[2, 0, 1])", {{"a", 2}, {"b", 2}, {"c", 3}}, y), {3, 2, 2},
               {1, 4, 7, 10, 2, 5, 8, 11, 3, 6, 9, 12});
  auto parts = run_text("program p(X: f32[n, 2*d]) {\n  A, B = split(X, 2, axis=-1)\n  C, D = split(X, 2, axis=0)\n  return A, B, C, D\n}\n",
                        {{"n", 2}, {"d", 2}}, {{"X", f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})}});
  check_values(parts[0], {2, 2}, {1, 2, 5, 6});
  check_values(parts[1], {2, 2}, {3, 4, 7, 8});
  check_values(parts[2], {1, 4}, {1, 2, 3, 4});
  check_values(parts[3], {1, 4}, {5, 6, 7, 8});
}

TEST_CASE("every result is rounded to its dtype", "[engine][interp]") {
  DimBindings b{{"n", 3}};
  // f16: 2048 + 1 ties to 2048, 2048 + 3 ties to 2052; 60000 + 60000 overflows.
  Tensor h = tensor(DType::F16, {3}, {2048, 2048, 60000});
  Tensor sum = run_text("program p(X: f16[n], Y: f16[n]) {\n  return X + Y\n}\n", b, {{"X", h}, {"Y", tensor(DType::F16, {3}, {1, 3, 60000})}})[0];
  CHECK(sum.dtype == DType::F16);
  CHECK(sum.data[0] == 2048.0f);
  CHECK(sum.data[1] == 2052.0f);
  CHECK(std::isinf(sum.data[2]));
  // 1/3 in f16 and bf16
  CHECK(run1("X: f16[n]", "X / 3", b, tensor(DType::F16, {3}, {1, 1, 1})).data[0] == f16_bits_to_f32(0x3555));
  CHECK(run1("X: bf16[n]", "X + 3 * 0.00390625", b, tensor(DType::BF16, {3}, {1, 1, 1})).data[0] == 1.015625f);
  // f16 subnormal results
  CHECK(run1("X: f16[n]", "X * 0.5", b, tensor(DType::F16, {3}, {0x1p-24f, 3 * 0x1p-24f, 0})).data ==
        std::vector<float>{0.0f, 2 * 0x1p-24f, 0.0f});
  // f16 with bf16 computes in f32
  auto mixed = run_text("program p(X: f16[n], Y: bf16[n]) {\n  return X + Y\n}\n", b,
                        {{"X", tensor(DType::F16, {3}, {1, 1, 1})}, {"Y", tensor(DType::BF16, {3}, {0x1p-20f, 0, 0})}})[0];
  CHECK(mixed.dtype == DType::F32);
  CHECK(mixed.data[0] == 1.0f + 0x1p-20f);
  // inputs given in f32 are rounded to the declared dtype
  CHECK(run1("X: f16[n]", "X * 1", b, f32({3}, {1.0f / 3, 0, 0})).data[0] == f16_bits_to_f32(0x3555));
  // matmul accumulates in f32 and rounds once: 2048 + 1 + 1 + ... in f16 would stall at 2048.
  std::vector<float> ones(9, 1.0f);
  ones[0] = 2048;
  Tensor row = tensor(DType::F16, {1, 9}, ones);
  Tensor col = tensor(DType::F16, {9, 1}, std::vector<float>(9, 1.0f));
  auto mm = run_text("program p(A: f16[m, k], B: f16[k, n]) {\n  return A @ B, sum(A)\n}\n", {{"m", 1}, {"k", 9}, {"n", 1}}, {{"A", row}, {"B", col}});
  CHECK(mm[0].data[0] == 2056.0f);
  CHECK(mm[1].data[0] == 2056.0f);
}

TEST_CASE("runtime dim and input errors", "[engine][interp]") {
  Tensor x = f32({4}, {1, 2, 3, 4});
  try {
    run_text("program p(X: f32[d]) {\n  return reshape(X, [d/3, 3])\n}\n", {{"d", 4}}, {{"X", x}});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::InvalidArgument);
    CHECK(std::string(e.what()) == "dim d/3 is not a positive integer for d=4 (it is 4/3)");
  }
  try {
    run_text("program p(X: f32[d]) {\n  return X\n}\n", {{"d", 5}}, {{"X", x}});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "input 'X' has shape (4,) but the program expects [d] = (5,)");
  }
  CHECK_THROWS_AS(run_text("program p(X: f32[d]) {\n  return X\n}\n", {}, {{"X", x}}), Error);
  // Counts that only the bindings decide are checked at run time.
  try {
    run_text("program p(X: f32[a, b], Y: f32[c]) {\n  return reshape(X, [c])\n}\n", {{"a", 2}, {"b", 2}, {"c", 3}},
             {{"X", f32({2, 2}, {1, 2, 3, 4})}, {"Y", f32({3}, {1, 2, 3})}});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("reshape: cannot reshape (2, 2) (4 elements)") == 0);
  }
}

TEST_CASE("random inputs are deterministic per seed and name", "[engine][interp]") {
  Tensor a = random_tensor(DType::F16, {4, 8}, 7, "X");
  Tensor b = random_tensor(DType::F16, {4, 8}, 7, "X");
  Tensor c = random_tensor(DType::F16, {4, 8}, 7, "W");
  Tensor d = random_tensor(DType::F16, {4, 8}, 8, "X");
  CHECK(a.data == b.data);
  CHECK(a.data != c.data);
  CHECK(a.data != d.data);
  for (float v : a.data) {
    CHECK(v >= -1.0f);
    CHECK(v <= 1.0f);
    CHECK(round_to(DType::F16, v) == v);
  }
  Tensor big = random_tensor(DType::F32, {10000}, 1, "Z");
  double mean = 0;
  for (float v : big.data) mean += v;
  CHECK(std::abs(mean / 10000) < 0.05);
}

TEST_CASE("interpretation is cancellable", "[engine][interp]") {
  CancelToken token;
  token.cancel();
  Tensor x = f32({4}, {1, 2, 3, 4});
  try {
    run_text("program p(X: f32[d]) {\n  return exp(X)\n}\n", {{"d", 4}}, {{"X", x}}, &token);
    FAIL("expected cancellation");
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::Cancelled);
  }
}

TEST_CASE("a request over the memory budget says how much it needs, or that no machine has it", "[engine][interp][errors]") {
  // Issue 61, 12: an overflowing estimate read "needs about more than any machine has".
  CHECK_NOTHROW(check_memory_budget("running 'p'", 1024, 2048));
  CHECK_THROWS_WITH(check_memory_budget("running 'p'", int64_t(3) << 30, int64_t(1) << 30),
                    Catch::StartsWith("running 'p' needs about 3.0 GiB, more than the memory budget of 1.0 GiB"));
  const int64_t unbounded = std::numeric_limits<int64_t>::max();
  CHECK_THROWS_WITH(check_memory_budget("running 'p'", unbounded, int64_t(1) << 30),
                    Catch::StartsWith("running 'p' needs more memory than any machine has, more than the memory budget of 1.0 GiB"));
  const Program huge = only_program("program p(X: f32[n, d]) {\n  return X * 2\n}\n");
  CHECK(interpreter_bytes(huge, {{"n", int64_t(1) << 40}, {"d", int64_t(1) << 40}}) == unbounded);
}
