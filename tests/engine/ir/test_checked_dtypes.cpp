// The dtype each output is checked at (engine/ir/checked_dtypes.h): the coarsest dtype computed
// on its way, so that an f32 output of a bf16 computation (autocast's matmul beside an f32
// residual) is held to bf16's tolerance, and inputs count for nothing.
#include <catch2/catch.hpp>

#include "../compile_helpers.h"
#include "engine/ir/checked_dtypes.h"

using namespace prism;

TEST_CASE("checked dtypes: a bf16 matmul beside an f32 residual is checked at bf16, widened inputs at f32", "[ir][casts]") {
  // The autocast piece: the matmul's operands rounded to bf16, its product added to f32.
  const Program autocast = test::only_program(
      "program autocast_mlp(x: f32[n, d], w: f32[o, d], r: f32[n, o]) {\n  return r + bf16(x) @ bf16(w).T\n}\n");
  CHECK(checked_dtypes(autocast) == std::vector<DType>{DType::BF16});
  // 16-bit inputs hold their values exactly: widened and computed at f32, nothing is rounded.
  const Program widened = test::only_program(
      "program widened(x: bf16[n, d], g: f16[d]) {\n  return f32(x) * f32(g)\n}\n");
  CHECK(checked_dtypes(widened) == std::vector<DType>{DType::F32});
}

TEST_CASE("checked dtypes: each output by its own way, the coarser of f16 and bf16 taken", "[ir][casts]") {
  const Program p = test::only_program(
      "program two(x: f32[n, d], y: f32[n, d]) {\n"
      "  a = x * y\n"
      "  h = f32(f16(x) * f16(y))\n"
      "  return a, h + f32(bf16(y)), f16(a)\n"
      "}\n");
  CHECK(checked_dtypes(p) == std::vector<DType>{DType::F32, DType::BF16, DType::F16});
  CHECK(coarser(DType::F16, DType::BF16) == DType::BF16);
  CHECK(coarser(DType::F32, DType::F16) == DType::F16);
  CHECK(coarser(DType::F32, DType::F32) == DType::F32);
}
