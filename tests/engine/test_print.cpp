#include <catch2/catch.hpp>

#include "compile_helpers.h"
#include "engine/ir/lower_composites.h"
#include "engine/ir/print.h"

using namespace prism;
using prism::test::only_program;

namespace {
const char* kRmsLinear =
    "# O = rms_norm(X) @ W\n"
    "program rms_linear(X: f16[n, d], W: f16[d, d]) {\n"
    "  Y = rms_norm(X)            # X / rms(X, axis=-1)\n"
    "  return matmul(Y, W)\n"
    "}\n";
}  // namespace

TEST_CASE("programs print back with types as comments", "[engine][print]") {
  Program p = only_program(kRmsLinear);
  CHECK(print_program(p) ==
        "program rms_linear(X: f16[n, d], W: f16[d, d]) {\n"
        "  Y = rms_norm(X)  # f16[n, d]\n"
        "  out = matmul(Y, W)  # f16[n, d]\n"
        "  return out\n"
        "}\n");
  CHECK(signature(p) == "program rms_linear(X: f16[n, d], W: f16[d, d]) -> f16[n, d]");
}

TEST_CASE("composites lower to primitives in one place", "[engine][lower]") {
  Program low = lower_composites(only_program(kRmsLinear));
  CHECK(!low.has_composites());
  CHECK(print_program(low) ==
        "program rms_linear(X: f16[n, d], W: f16[d, d]) {\n"
        "  t0 = f32(X)  # f32[n, d]\n"  // 16-bit statistics are f32; only the result is rounded
        "  t1 = rms(t0, axis=-1)  # f32[n, 1]\n"
        "  t2 = t0 / t1  # f32[n, d]\n"
        "  Y = f16(t2)  # f16[n, d]\n"
        "  out = matmul(Y, W)  # f16[n, d]\n"
        "  return out\n"
        "}\n");

  Program eps = lower_composites(only_program("program p(X: bf16[n, d]) {\n  return rms_norm(X, eps=1e-6)\n}\n"));
  CHECK(print_program(eps) ==
        "program p(X: bf16[n, d]) {\n"
        "  t0 = f32(X)  # f32[n, d]\n"
        "  t1 = t0 * t0  # f32[n, d]\n"
        "  t2 = sum(t1, axis=-1)  # f32[n, 1]\n"
        "  t3 = t2 / d  # f32[n, 1]\n"
        "  t4 = t3 + 1e-06  # f32[n, 1]\n"
        "  t5 = sqrt(t4)  # f32[n, 1]\n"
        "  t6 = t0 / t5  # f32[n, d]\n"
        "  out = bf16(t6)  # bf16[n, d]\n"
        "  return out\n"
        "}\n");

  Program sm = lower_composites(only_program("program p(X: f32[a, b]) {\n  S = softmax(X, axis=0)\n  return mean(S, axis=-1, keepdims=false)\n}\n"));
  CHECK(print_program(sm) ==
        "program p(X: f32[a, b]) {\n"
        "  t0 = max(X, axis=-2)  # f32[1, b]\n"
        "  t1 = X - t0  # f32[a, b]\n"
        "  t2 = exp(t1)  # f32[a, b]\n"
        "  t3 = sum(t2, axis=-2)  # f32[1, b]\n"
        "  S = t2 / t3  # f32[a, b]\n"
        "  t4 = sum(S, axis=-1, keepdims=false)  # f32[a]\n"
        "  out = t4 / b  # f32[a]\n"
        "  return out\n"
        "}\n");
}

TEST_CASE("printed and lowered text re-parses to the same program", "[engine][print]") {
  const char* texts[] = {
      kRmsLinear,
      "program p(X: f16[n, 2*d], W: f16[d, e]) {\n  A, B = split(X, 2, axis=-1)\n  C = concat(A, -B, axis=0)\n"
      "  R = reshape(transpose(C), [d, 2, n])\n  return R, matmul(A, W) * (d/2) - 0.5, transpose(R, perm=[2, 0, 1])\n}\n",
      "program q(X: bf16[b, s, e]) {\n  return softmax(X / 3, axis=1), max(X, axis=0, keepdims=false), gelu(silu(relu(X)))\n}\n",
  };
  for (const char* text : texts) {
    Program p = only_program(text);
    std::string printed = print_program(p);
    CHECK(print_program(only_program(printed)) == printed);
    std::string lowered = print_program(lower_composites(p));
    Program again = only_program(lowered);
    CHECK(print_program(again) == lowered);
    CHECK(signature(again) == signature(p));
  }
}

TEST_CASE("constants print so that they read back", "[engine][print]") {
  CHECK(constant_str({Dim(2), 0}) == "2");
  CHECK(constant_str({Dim(-1), 0}) == "(-1)");
  CHECK(constant_str({Dim::symbol("d"), 0}) == "d");
  CHECK(constant_str({Dim::symbol("d") / Dim(2), 0}) == "(d/2)");
  CHECK(constant_str({std::nullopt, 0.5}) == "0.5");
  CHECK(constant_str({std::nullopt, 2.0}) == "2.0");
  CHECK(constant_str({std::nullopt, -1e-06}) == "(-1e-06)");
}
