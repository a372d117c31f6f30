#include "engine/interp/half.h"

#include <bit>
#include <cmath>

namespace prism {

uint16_t f32_to_f16_bits(float x) {
  uint32_t f = std::bit_cast<uint32_t>(x);
  uint16_t sign = uint16_t((f >> 16) & 0x8000u);
  uint32_t a = f & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) {  // inf or NaN
    if (a == 0x7F800000u) return sign | 0x7C00u;
    return uint16_t(sign | 0x7E00u | ((a >> 13) & 0x3FFu));  // quiet NaN, payload's top bits kept
  }
  // 65520 = 0x477FF000 lies halfway between the largest f16 (65504) and 2^16; ties-to-even goes up.
  if (a >= 0x477FF000u) return sign | 0x7C00u;
  if (a < 0x38800000u) {
    // Below the smallest normal (2^-14): the result is a multiple of 2^-24. Scaling by 2^24 is exact
    // in f32, and nearbyint rounds half to even in the default rounding mode.
    float scaled = std::bit_cast<float>(a) * 16777216.0f;
    return uint16_t(sign | uint16_t(std::nearbyint(scaled)));  // 0x400 (a normal) encodes correctly too
  }
  uint32_t exponent = (a >> 23) - 127 + 15;
  uint32_t mantissa = a & 0x7FFFFFu;
  uint32_t h = (exponent << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return uint16_t(sign | h);
}

float f16_bits_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {
    float v = float(mantissa) * (1.0f / 16777216.0f);  // subnormal: mantissa * 2^-24, exact
    return sign ? -v : v;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t f32_to_bf16_bits(float x) {
  uint32_t f = std::bit_cast<uint32_t>(x);
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((f >> 16) | 0x0040u);  // NaN stays a quiet NaN
  // Adding 0x7FFF plus the lowest kept bit rounds half to even; overflow carries into inf.
  f += 0x7FFFu + ((f >> 16) & 1u);
  return uint16_t(f >> 16);
}

float bf16_bits_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

float round_to(DType dtype, float x) {
  switch (dtype) {
    case DType::F16: return f16_bits_to_f32(f32_to_f16_bits(x));
    case DType::BF16: return bf16_bits_to_f32(f32_to_bf16_bits(x));
    case DType::F32: return x;
  }
  return x;
}

void round_all(DType dtype, float* data, size_t n) {
  if (dtype == DType::F16) {
    for (size_t i = 0; i < n; ++i) data[i] = f16_bits_to_f32(f32_to_f16_bits(data[i]));
  } else if (dtype == DType::BF16) {
    for (size_t i = 0; i < n; ++i) data[i] = bf16_bits_to_f32(f32_to_bf16_bits(data[i]));
  }
}

}  // namespace prism
