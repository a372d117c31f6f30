#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>

#include "engine/interp/half.h"

using namespace prism;

TEST_CASE("f16 conversion rounds to nearest even", "[engine][half]") {
  CHECK(f32_to_f16_bits(1.0f) == 0x3C00);
  CHECK(f32_to_f16_bits(-2.0f) == 0xC000);
  CHECK(f32_to_f16_bits(1.0f / 3.0f) == 0x3555);
  CHECK(f32_to_f16_bits(65504.0f) == 0x7BFF);
  CHECK(f32_to_f16_bits(65519.0f) == 0x7BFF);
  CHECK(f32_to_f16_bits(65520.0f) == 0x7C00);  // tie goes to the even value, 2^16, which overflows
  CHECK(f32_to_f16_bits(1e9f) == 0x7C00);
  CHECK(f32_to_f16_bits(-1e9f) == 0xFC00);
  CHECK(f32_to_f16_bits(1.0f + 0x1p-11f) == 0x3C00);          // tie, even stays
  CHECK(f32_to_f16_bits(1.0f + 3 * 0x1p-11f) == 0x3C02);      // tie, rounds up to even
  CHECK(f32_to_f16_bits(1.0f + 0x1p-11f + 0x1p-20f) == 0x3C01);
  CHECK(f32_to_f16_bits(2047.0f + 0.5f) == 0x6800);  // 2047.5 ties to 2048
}

TEST_CASE("f16 subnormals, zeros, inf and NaN", "[engine][half]") {
  CHECK(f32_to_f16_bits(0x1p-24f) == 0x0001);
  CHECK(f32_to_f16_bits(0x1p-25f) == 0x0000);           // tie to even: 0
  CHECK(f32_to_f16_bits(3 * 0x1p-25f) == 0x0002);       // 1.5 ulp ties to 2
  CHECK(f32_to_f16_bits(0x1p-14f) == 0x0400);           // smallest normal
  CHECK(f32_to_f16_bits(0x1p-14f - 0x1p-25f) == 0x0400);  // rounds up into the normals
  CHECK(f32_to_f16_bits(-0.0f) == 0x8000);
  CHECK(f32_to_f16_bits(1e-10f) == 0x0000);
  CHECK(f16_bits_to_f32(0x0001) == 0x1p-24f);
  CHECK(f16_bits_to_f32(0x03FF) == 1023 * 0x1p-24f);
  CHECK(f16_bits_to_f32(0x7BFF) == 65504.0f);
  CHECK(std::isinf(f16_bits_to_f32(0x7C00)));
  CHECK(f32_to_f16_bits(std::numeric_limits<float>::infinity()) == 0x7C00);
  uint16_t nan = f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7C00) == 0x7C00);
  CHECK((nan & 0x03FF) != 0);
  CHECK(std::isnan(f16_bits_to_f32(nan)));
  CHECK(std::isnan(round_to(DType::F16, std::numeric_limits<float>::quiet_NaN())));
  // Every f16 value converts to f32 and back unchanged.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;  // NaNs: payload handled above
    REQUIRE(f32_to_f16_bits(f16_bits_to_f32(uint16_t(h))) == h);
  }
}

TEST_CASE("bf16 conversion rounds to nearest even", "[engine][half]") {
  CHECK(f32_to_bf16_bits(1.0f) == 0x3F80);
  CHECK(round_to(DType::BF16, 1.0f + 0x1p-8f) == 1.0f);                      // tie, even stays
  CHECK(round_to(DType::BF16, 1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);        // tie, up to even
  CHECK(round_to(DType::BF16, 1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f);
  CHECK(std::isinf(round_to(DType::BF16, std::numeric_limits<float>::max())));
  CHECK(std::isnan(round_to(DType::BF16, std::numeric_limits<float>::quiet_NaN())));
  CHECK(round_to(DType::BF16, 0x1p-130f) == 0x1p-130f);  // f32 subnormals keep their top bits
  CHECK(round_to(DType::F32, 0.1f) == 0.1f);
}
