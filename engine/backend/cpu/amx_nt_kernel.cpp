#include "engine/backend/cpu/amx_kernel.h"

namespace prism::backend::cpu::detail {

// C[M x N] (= or +=) A[M x K] @ B^T on the tiles, B stored as Bt[N x K] (an nn.Linear weight
// [out, in] used as W^T, read where it lies): computed as C^T = Bt @ A^T, so that Bt's rows are
// the tile product's first operand as they lie (pairs along K). bf16 Bt's tiles are loaded from
// it; f16's are its rows split into (hi, lo) words (amx_split_kernel.cpp), with no transposes.
// A, small and shared by every column, is the one transposed: the words prism_split_a makes of
// each of its rows become the columns of the second operand's tiles, once per K panel. Tiles
// (prism_amx_configure's `swapped`): 0-3 C^T (16 columns of C by R rows each), 4-5 A^T (hi and
// lo, or bf16 A's one), 6-7 Bt. Per 16 rows of C and 512 columns, each 64-column strip keeps its
// four C^T tiles over a whole K panel: 64 rows of Bt are read 1 KB a row per visit.
const char* kAmxNtKernel = R"amx(
#if defined(PRISM_AMX) && defined(__x86_64__) && defined(__AVX512F__)
// The first operand's tile for Bt's rows from b (n of them, then zeros) and K values from there
// (kr of them, then zeros): bf16 where it lies when whole, else staged into `stage` (f16's words,
// a zero-padded copy of bf16). Its row stride goes into `stride`.
template <long LDB>
static inline const void* prism_nt_b(const prism_bf16* b, long n, long kr, unsigned* stage, long& stride) {
  if (n >= 16 && kr >= 32) {
    stride = LDB * 2;
    return b;
  }
  for (long i = 0; i < 16; ++i)
    for (long j = 0; j < 16; ++j) {
      const unsigned lo = i < n && 2 * j < kr ? b[i * LDB + 2 * j].bits : 0u, hi = i < n && 2 * j + 1 < kr ? b[i * LDB + 2 * j + 1].bits : 0u;
      stage[i * 16 + j] = lo | hi << 16;
    }
  stride = 64;
  return stage;
}
template <long LDB>
static inline const void* prism_nt_b(const prism_f16* b, long n, long kr, unsigned* stage, long& stride) {
  for (long i = 0; i < 16; ++i) prism_split_b(b + i * LDB, i < n ? kr : 0, stage + 16 * i);
  stride = 64;
  return stage;
}
// C^T tile t += Bt's rows ns + 16t .. (loaded into tile b) times A^T's tiles.
#define PRISM_NT_PRODUCTS(t, b)                                                                         \
  {                                                                                                     \
    long stride;                                                                                        \
    const void* p = prism_nt_b<LDB>(B + (ns + 16 * t) * LDB + kb + k, N - ns - 16 * t, kr, stage[t], stride); \
    PRISM_TILE_LOAD(b, p, stride);                                                                      \
    PRISM_TILE_DP(t, b, 4);                                                                             \
    if (two) PRISM_TILE_DP(t, b, 5);                                                                    \
  }
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, typename TA, typename TB>
static void prism_mm_amx_nt(const TA* __restrict A, const TB* __restrict B, float* __restrict C) {
  constexpr long KT = prism_split_kind<TA, TB>::kt;  // K values a tile row holds
  constexpr bool two = prism_split_kind<TA, TB>::two;
  constexpr long KB = K < 512 ? (K + KT - 1) / KT * KT : 512;  // K values in one panel
  constexpr long NB = PRISM_AMX_COLUMNS;
  alignas(64) unsigned ah[KB / KT * 16][16], al[two ? KB / KT * 16 : 1][16];  // A^T: 16 rows of words per K step
  alignas(64) unsigned row_h[16], row_l[16];
  alignas(64) float c[NB / 64][4][256];
  alignas(64) unsigned stage[4][256];
  prism_amx_blocks<M, N, K, KB, ACC, prism_amx_transposed>(c, NB, C, LDC, [&](long m0, int rows, long n0, int strips, long kb, long kn) {
    for (long k = 0; k < kn; k += KT)
      for (int r = 0; r < rows; ++r) {
        prism_split_a(A + (m0 + r) * LDA + kb + k, kn - k, B, row_h, row_l);
        for (int i = 0; i < 16; ++i) {
          ah[k / KT * 16 + i][r] = row_h[i];
          if (two) al[k / KT * 16 + i][r] = row_l[i];
        }
      }
    for (int s = 0; s < strips; ++s) {
      const long ns = n0 + 64 * s;
      prism_amx_c_load(c[s], kb == 0);
      for (long k = 0; k < kn; k += KT) {
        const long kr = kn - k < KT ? kn - k : KT;
        PRISM_TILE_LOAD(4, ah[k / KT * 16], 64);
        if (two) PRISM_TILE_LOAD(5, al[k / KT * 16], 64);
        PRISM_NT_PRODUCTS(0, 6);
        PRISM_NT_PRODUCTS(1, 7);
        PRISM_NT_PRODUCTS(2, 6);
        PRISM_NT_PRODUCTS(3, 7);
      }
      prism_amx_c_store(c[s]);
    }
  });
}
template <> struct prism_amx_nt<prism_bf16, prism_bf16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_NT_ROWS; };
template <> struct prism_amx_nt<float, prism_bf16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_WIDE_ROWS; };
template <> struct prism_amx_nt<prism_f16, prism_f16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_F16_ROWS; };
template <> struct prism_amx_nt<float, prism_f16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_F16_ROWS; };
#endif
)amx";

}  // namespace prism::backend::cpu::detail
