// 16-bit storage in the generated CPU code (issue 18): tensors declared f16 or bf16 stay 16-bit
// in memory, and every op computes in f32. prism_f16 and prism_bf16 hold the bits; reading one
// converts to float and assigning a float rounds to nearest even, exactly as the reference
// interpreter's engine/interp/half.h does. Both conversions are branch-free integer and float
// arithmetic, so GCC vectorizes the loops that read or write them (on any x86-64: the f16 path
// needs no F16C, the bf16 one no AVX-512 BF16; a test compiles such loops and reads GCC's report).
// The fused kernels and the eager baseline share this text, so they round alike.
#pragma once
#include "engine/ir/dtype.h"

namespace prism::backend::cpu {

// The C++ element type of storage at `dtype`: "float", "prism_f16", "prism_bf16".
inline const char* storage_type_name(DType dtype) {
  return dtype == DType::F16 ? "prism_f16" : dtype == DType::BF16 ? "prism_bf16" : "float";
}

inline constexpr const char* kStorageTypes = R"(#include <stdint.h>
static inline float prism_bits_f32(uint32_t u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
static inline uint32_t prism_f32_bits(float f) { uint32_t u; __builtin_memcpy(&u, &f, 4); return u; }
struct prism_bf16 {
  uint16_t bits;
  operator float() const { return prism_bits_f32(uint32_t(bits) << 16); }
  prism_bf16& operator=(float x) {
    const uint32_t u = prism_f32_bits(x);
    // A NaN stays a quiet NaN; else adding 0x7fff plus the lowest kept bit rounds half to even.
    bits = (u & 0x7fffffffu) > 0x7f800000u ? uint16_t((u >> 16) | 0x40u) : uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return *this;
  }
};
struct prism_f16 {
  uint16_t bits;
  operator float() const {
    const uint32_t h = bits, a = (h & 0x7fffu) << 13, e = a & 0x0f800000u;
    const uint32_t normal = a + ((127u - 15u) << 23), special = a + ((255u - 31u) << 23);
    const uint32_t sub = prism_f32_bits(prism_bits_f32(a + (113u << 23)) - prism_bits_f32(113u << 23));  // exact
    // Selected by masks, not ?: (GCC 12 turns the nested ?: into branches and vectorizes no loop
    // that reads f16 on AVX2).
    const uint32_t is_special = 0u - uint32_t(e == 0x0f800000u), is_zero = 0u - uint32_t(e == 0);
    const uint32_t r = (special & is_special) | (sub & is_zero) | (normal & ~(is_special | is_zero));
    return prism_bits_f32(r | ((h & 0x8000u) << 16));
  }
  prism_f16& operator=(float x) {
    // Overflow, infinity and NaN; results below the smallest normal (a float add rounds them);
    // normal results (rounded half to even by adding 0xfff plus the lowest kept bit).
    const uint32_t u = prism_f32_bits(x), sign = (u >> 16) & 0x8000u, f = u & 0x7fffffffu;
    const uint32_t big = 0x7c00u | ((0u - uint32_t(f > 0x7f800000u)) & 0x0200u);
    const uint32_t small = prism_f32_bits(prism_bits_f32(f) + prism_bits_f32(126u << 23)) - (126u << 23);
    const uint32_t mid = (f + ((15u - 127u) << 23) + 0xfffu + ((f >> 13) & 1u)) >> 13;
    const uint32_t is_big = 0u - uint32_t(f >= (143u << 23)), is_small = 0u - uint32_t(f < (113u << 23));
    bits = uint16_t((big & is_big) | (small & is_small) | (mid & ~(is_big | is_small)) | sign);
    return *this;
  }
};
)";

}  // namespace prism::backend::cpu
