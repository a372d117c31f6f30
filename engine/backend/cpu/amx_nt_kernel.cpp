#include "engine/backend/cpu/amx_kernel.h"

namespace prism::backend::cpu::detail {

// C[M x N] (= or +=) A[M x K] @ B^T on the tiles, B stored as Bt[N x K] (an nn.Linear weight
// [out, in] used as W^T, read where it lies): computed as C^T = Bt @ A^T, so that Bt's rows are
// the tile product's first operand as they lie (pairs along K). bf16 Bt's tiles are loaded from
// it; f16's are its rows split into (hi, lo) words (amx_split_kernel.cpp), with no transposes.
// A, small and shared by every column, is the one transposed: the words prism_split_a makes of
// each of its rows become the columns of the second operand's tiles, for all of K at once (in a
// thread's buffer). Tiles (prism_amx_configure's `swapped`): 0-1 C^T (16 columns of C by R rows
// each), 4-5 A^T (hi and lo, or bf16 A's one), 6-7 Bt. Per 16 rows of C, 32 rows of Bt at a time
// go down all of K, their two C^T tiles kept: each row of Bt is read in one run, 32 rows side by
// side (what hardware prefetchers follow). 2-core Sapphire Rapids, 4096 x 4096 weights in huge
// pages, against 64 rows a strip over K panels of 512 (1 KB of each row a visit): bf16 8 rows
// 0.90-0.94 -> 0.67-0.69 ms, 16 rows 1.15 -> 0.84, f16 16 rows 2.75 -> 1.89; 64 rows down all of
// K 0.74-0.78 (8 rows), 16 rows 0.69; 32 rows over panels of 2048 0.71, of 512 0.90.
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
    const void* p = prism_nt_b<LDB>(B + (ns + 16 * t) * LDB + k, N - ns - 16 * t, kr, stage[t], stride);      \
    PRISM_TILE_LOAD(b, p, stride);                                                                      \
    PRISM_TILE_DP(t, b, 4);                                                                             \
    if (two) PRISM_TILE_DP(t, b, 5);                                                                    \
  }
// False (nothing done) where A^T's buffer is out of memory: the vector kernel runs then.
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, typename TA, typename TB>
static bool prism_mm_amx_nt(const TA* __restrict A, const TB* __restrict B, float* __restrict C) {
  constexpr long KT = prism_split_kind<TA, TB>::kt;  // K values a tile row holds
  constexpr bool two = prism_split_kind<TA, TB>::two;
  constexpr long STEPS = (K + KT - 1) / KT;  // tile rows of A^T
  unsigned(*const ah)[16][16] = static_cast<unsigned(*)[16][16]>(prism_thread_buffer<5>(sizeof(unsigned) * 256 * STEPS * (two ? 2 : 1)));
  if (!ah) return false;
  unsigned(*const al)[16][16] = ah + (two ? STEPS : 0);  // A^T's tiles: K step s at ah[s] (and al[s])
  alignas(64) unsigned row_h[16], row_l[16];
  alignas(64) float c[1][4][256];  // C^T's tiles 0-1 (2-3 stay zero)
  alignas(64) unsigned stage[2][256];
  for (long m0 = 0; m0 < M; m0 += 16) {
    const int rows = M - m0 < 16 ? int(M - m0) : 16;
    prism_amx_configure(rows, true);
    for (long k = 0; k < K; k += KT)
      for (int r = 0; r < rows; ++r) {
        prism_split_a(A + (m0 + r) * LDA + k, K - k, B, row_h, row_l);
        for (int i = 0; i < 16; ++i) {
          ah[k / KT][i][r] = row_h[i];
          if (two) al[k / KT][i][r] = row_l[i];
        }
      }
    for (long ns = 0; ns < N; ns += 32) {
      prism_amx_c_load(c[0], true);
      for (long k = 0; k < K; k += KT) {
        const long kr = K - k < KT ? K - k : KT;
        PRISM_TILE_LOAD(4, ah[k / KT], 64);
        if (two) PRISM_TILE_LOAD(5, al[k / KT], 64);
        PRISM_NT_PRODUCTS(0, 6);
        PRISM_NT_PRODUCTS(1, 7);
      }
      prism_amx_c_store(c[0]);
      prism_amx_out<prism_amx_transposed>(c, 1, rows, ns, ns + 32 < N ? ns + 32 : N, C + m0 * LDC, LDC, ACC);
    }
  }
  return true;
}
template <> struct prism_amx_nt<prism_bf16, prism_bf16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_NT_ROWS; };
template <> struct prism_amx_nt<float, prism_bf16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_WIDE_ROWS; };
template <> struct prism_amx_nt<prism_f16, prism_f16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_F16_ROWS; };
template <> struct prism_amx_nt<float, prism_f16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_F16_ROWS; };
#endif
)amx";

}  // namespace prism::backend::cpu::detail
