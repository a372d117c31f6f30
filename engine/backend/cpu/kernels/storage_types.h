#include <stdint.h>
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
#if defined(__F16C__) && defined(__AVX2__) && defined(_OPENMP)
// F16C converts 8 lanes an instruction (vcvtph2ps, vcvtps2ph), exactly and rounding to nearest
// even, but GCC 12 vectorizes no loop of scalar f16 conversions with it. It does call a function
// declared `omp declare simd` once per vector, by the vector ABI's name: at simdlen 8 on 32-bit
// lanes both the AVX2 (_ZGVd) and the AVX-512 (_ZGVe) variant take and return one ymm register,
// so both are defined here by hand. Declared const, so that a loop without `ivdep` calls them
// too; hidden, so each kernel library calls its own; weak, so that several exported kernels link
// into one program (the definitions are the same in every one). GCC's builtins, not <immintrin.h> (0.3 s
// more per compile).
#define PRISM_F16_BY_F16C 1
#define PRISM_HIDDEN __attribute__((visibility("hidden"), weak))
typedef float prism_v4sf __attribute__((vector_size(16)));
typedef float prism_v8sf __attribute__((vector_size(32)));
typedef short prism_v8hi __attribute__((vector_size(16)));
typedef unsigned short prism_v8hu __attribute__((vector_size(16)));
typedef unsigned prism_v8su __attribute__((vector_size(32)));
#pragma omp declare simd notinbranch simdlen(8)
extern "C" PRISM_HIDDEN __attribute__((const)) float prism_h2f(uint32_t h);
#pragma omp declare simd notinbranch simdlen(8)
extern "C" PRISM_HIDDEN __attribute__((const)) uint32_t prism_f2h(float f);
extern "C" PRISM_HIDDEN float prism_h2f_1(uint32_t h) __asm__("prism_h2f");
extern "C" PRISM_HIDDEN float prism_h2f_1(uint32_t h) { return __builtin_ia32_vcvtph2ps(prism_v8hi{short(h)})[0]; }
extern "C" PRISM_HIDDEN uint32_t prism_f2h_1(float f) __asm__("prism_f2h");
extern "C" PRISM_HIDDEN uint32_t prism_f2h_1(float f) { return uint16_t(__builtin_ia32_vcvtps2ph(prism_v4sf{f}, 0)[0]); }
static inline prism_v8sf prism_h2f_ymm(prism_v8su h) {
  return __builtin_ia32_vcvtph2ps256(prism_v8hi(__builtin_convertvector(h, prism_v8hu)));
}
static inline prism_v8su prism_f2h_ymm(prism_v8sf f) {
  return __builtin_convertvector(prism_v8hu(__builtin_ia32_vcvtps2ph256(f, 0)), prism_v8su);
}
extern "C" PRISM_HIDDEN prism_v8sf prism_h2f_d(prism_v8su h) __asm__("_ZGVdN8v_prism_h2f");
extern "C" PRISM_HIDDEN prism_v8sf prism_h2f_d(prism_v8su h) { return prism_h2f_ymm(h); }
extern "C" PRISM_HIDDEN prism_v8su prism_f2h_d(prism_v8sf f) __asm__("_ZGVdN8v_prism_f2h");
extern "C" PRISM_HIDDEN prism_v8su prism_f2h_d(prism_v8sf f) { return prism_f2h_ymm(f); }
#ifdef __AVX512F__
extern "C" PRISM_HIDDEN prism_v8sf prism_h2f_e(prism_v8su h) __asm__("_ZGVeN8v_prism_h2f");
extern "C" PRISM_HIDDEN prism_v8sf prism_h2f_e(prism_v8su h) { return prism_h2f_ymm(h); }
extern "C" PRISM_HIDDEN prism_v8su prism_f2h_e(prism_v8sf f) __asm__("_ZGVeN8v_prism_f2h");
extern "C" PRISM_HIDDEN prism_v8su prism_f2h_e(prism_v8sf f) { return prism_f2h_ymm(f); }
#endif
struct prism_f16 {
  uint16_t bits;
  operator float() const { return prism_h2f(bits); }
  prism_f16& operator=(float x) {
    bits = uint16_t(prism_f2h(x));
    return *this;
  }
};
// Rows of f16 widened to f32 and f32 rounded to f16, 8 lanes an instruction (emit_ops.cpp stages
// elementwise loops through f32 chunks with them).
static inline void prism_widen_f16(const prism_f16* src, float* dst, long n) {
  long i = 0;
  for (; i + 8 <= n; i += 8) {
    prism_v8hi h;
    __builtin_memcpy(&h, src + i, 16);
    const prism_v8sf f = __builtin_ia32_vcvtph2ps256(h);
    __builtin_memcpy(dst + i, &f, 32);
  }
  for (; i < n; ++i) dst[i] = src[i];
}
static inline void prism_narrow_f16(const float* src, prism_f16* dst, long n) {
  long i = 0;
  for (; i + 8 <= n; i += 8) {
    prism_v8sf f;
    __builtin_memcpy(&f, src + i, 32);
    const prism_v8hi h = __builtin_ia32_vcvtps2ph256(f, 0);
    __builtin_memcpy(dst + i, &h, 16);
  }
  for (; i < n; ++i) dst[i] = src[i];
}
#else
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
static inline void prism_widen_f16(const prism_f16* src, float* dst, long n) {
  for (long i = 0; i < n; ++i) dst[i] = src[i];
}
static inline void prism_narrow_f16(const float* src, prism_f16* dst, long n) {
  for (long i = 0; i < n; ++i) dst[i] = src[i];
}
#endif
