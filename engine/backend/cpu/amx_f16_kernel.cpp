#include "engine/backend/cpu/amx_kernel.h"

namespace prism::backend::cpu::detail {

// f16 x f16 on the bf16 tiles (kAmxKernel's macros and configuration: tiles 0-3 C, 4-5 A, 6-7
// B). The tile unit has no f16 products on Sapphire Rapids, but an f16 value has 11 significant
// bits and a bf16 8, so each splits exactly into hi (its f32's top 16 bits, a bf16) plus lo (the
// rest: at most 3 bits, a bf16 too). B's values are staged per visit as 32-bit words (hi, lo),
// A's as (a_hi, a_hi) and (a_lo, a_lo): the two tile products of a B tile add
// a_hi * (hi + lo) + a_lo * (hi + lo), every product exact and the sums in f32, as in the FMA
// kernels. Only infinities differ: an infinite operand meets a zero half of the other (0 * inf),
// so the sum is NaN where the reference has +-inf (B's lo is not even guarded: inf - inf).
// The staging runs on the vector units (about 1 ns per 16 weights on a Sapphire Rapids core), so
// this kernel is bound by it and by memory, not by the tiles, and it takes matmuls of at least
// kAmxF16MinRows rows of A (PRISM_AMX_F16_ROWS): with fewer, the FMA kernel's widening and
// products cost less than the split (2-core Xeon, an f16 RMSNorm and 4096 x 4096 layer: 8 rows
// 1.12 ms on FMAs, 1.51 on the tiles; 16 rows 2.71 on FMAs, 1.64 on the tiles).
// Order: as the bf16 kernel, per 16 rows of C and 512 columns, K advancing 16 rows at a time over
// every 64-column strip; each strip's 16 x 64 piece of B is converted into an L1 buffer and its
// four C tiles (16 columns each, in order) come from and go back to L1. Staging a strip just
// before its products lets the tiles multiply one strip while the vector units convert the next
// (converting 16 rows x 512 columns first and multiplying after was 1.6x slower; 32 rows a visit
// and strips over all of K were slower too: 2-core Xeon, 16 x 4096 @ 4096 x 4096).
const char* kAmxF16Kernel = R"amx(
#if defined(PRISM_AMX) && defined(__x86_64__) && defined(__AVX512F__)
typedef short prism_v16s __attribute__((vector_size(32)));
// C tile c += A's hi tile (4) and lo tile (5) times the staged B tile at src, loaded into tile b.
#define PRISM_F16_PRODUCTS(c, b, src) \
  PRISM_TILE_LOAD(b, src, 64);        \
  PRISM_TILE_DP(c, 4, b);             \
  PRISM_TILE_DP(c, 5, b)
// 16 f16 values from p (n of them, then zeros) as f32 split into hi and lo (both with zero low
// halves). `guard`: an infinity's lo is 0, not inf - inf.
template <bool guard>
static inline void prism_f16_split(const prism_f16* p, long n, prism_v16u& hi, prism_v16u& lo) {
  prism_f16 tmp[16];
  if (n < 16) {
    for (long i = 0; i < 16; ++i) tmp[i].bits = i < n ? p[i].bits : 0;
    p = tmp;
  }
  prism_v16s h;
  __builtin_memcpy(&h, p, 32);
  const prism_v16f x = __builtin_ia32_vcvtph2ps512_mask(h, prism_v16f{}, (unsigned short)0xffff, 4);
  const prism_v16u xb = (prism_v16u)x;
  hi = xb & 0xffff0000u;
  lo = (prism_v16u)(x - (prism_v16f)hi);
  if (guard) lo = (xb & 0xffffu) != 0 ? lo : prism_v16u{};
}
// 16 values from p (n of them, then zeros) as B's words (hi, lo).
static inline void prism_f16_words(const prism_f16* p, long n, unsigned* out) {
  prism_v16u hi, lo;
  prism_f16_split<false>(p, n, hi, lo);
  const prism_v16u w = (hi >> 16) | lo;
  __builtin_memcpy(out, &w, 64);
}
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC>
static void prism_mm_amx(const prism_f16* __restrict A, const prism_f16* __restrict B, float* __restrict C) {
  constexpr long KB = K < 512 ? (K + 15) / 16 * 16 : 512;  // K values in one A panel
  constexpr long AS = KB + 16;                              // words per panel row
  constexpr long NB = PRISM_AMX_COLUMNS;
  alignas(64) unsigned ah[16 * AS], al[16 * AS];  // A's (a_hi, a_hi) and (a_lo, a_lo) words
  alignas(64) float c[NB / 64][4][256];
  alignas(64) unsigned stage[4][16][16];  // a strip's 16 rows of B: tile t has columns 16t .. 16t + 15
  prism_amx_blocks<M, N, K, KB, ACC, false>(c, C, LDC, [&](long m0, int rows, long n0, int strips, long kb, long kn) {
    for (int r = 0; r < rows; ++r)
      for (long k = 0; k < kn; k += 16) {
        prism_v16u hi, lo;
        prism_f16_split<true>(A + (m0 + r) * LDA + kb + k, kn - k, hi, lo);
        const prism_v16u h = hi | (hi >> 16), l = lo | (lo >> 16);
        __builtin_memcpy(ah + r * AS + k, &h, 64);
        __builtin_memcpy(al + r * AS + k, &l, 64);
      }
    for (long k16 = 0; k16 < kn; k16 += 16) {
      PRISM_TILE_LOAD(4, ah + k16, AS * 4);  // A's two tiles, for every strip
      PRISM_TILE_LOAD(5, al + k16, AS * 4);
      for (int s = 0; s < strips; ++s) {
        const long ns = n0 + 64 * s, cols = N - ns < 64 ? N - ns : 64, kr = kn - k16 < 16 ? kn - k16 : 16;
        const prism_f16* b = B + (kb + k16) * LDB + ns;
        if (kr == 16 && cols == 64) {
#pragma GCC unroll 16
          for (int i = 0; i < 16; ++i)
#pragma GCC unroll 4
            for (int t = 0; t < 4; ++t) prism_f16_words(b + i * LDB + 16 * t, 16, stage[t][i]);
        } else {
          for (long i = 0; i < 16; ++i)
            for (int t = 0; t < 4; ++t) {
              const long n = i < kr ? cols - 16 * t : 0;
              prism_f16_words(b + i * LDB + 16 * t, n < 0 ? 0 : n, stage[t][i]);
            }
        }
        prism_amx_c_load(c[s], kb == 0 && k16 == 0);
        PRISM_F16_PRODUCTS(0, 6, stage[0]);
        PRISM_F16_PRODUCTS(1, 7, stage[1]);
        PRISM_F16_PRODUCTS(2, 6, stage[2]);
        PRISM_F16_PRODUCTS(3, 7, stage[3]);
        prism_amx_c_store(c[s]);
      }
    }
  });
}
template <> struct prism_amx<prism_f16, prism_f16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_F16_ROWS; };
#endif
)amx";

}  // namespace prism::backend::cpu::detail
