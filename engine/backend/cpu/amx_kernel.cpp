#include "engine/backend/cpu/amx_kernel.h"

namespace prism::backend::cpu::detail {

// Tiles: 0-3 hold a 16 x 64 block of C (four 16 x 16 f32 tiles), 4 the A tile (R rows of 32 bf16
// along K), 5 and 6 B tiles in turn (16 pair-rows: 32 K values of 16 columns, "VNNI" order).
// B is repacked into that order as it streams (rows k and k + 1 interleaved, the micro-kernel's
// prism_pairs), 64 columns x 32 rows at a time; A is read where it lies, except a last K chunk
// shorter than 32, copied with zeros after it (garbage there could be a NaN, and NaN * 0 is NaN).
// Rows past M, columns past N and K past its end are zeros in the packed tiles; C's tiles go
// through a buffer, their columns put back in order (the packing permutes them). The tile
// instructions are written as inline assembly (the assembler knows them; the compiler needs no
// -mamx flags and no <immintrin.h>). The prelude includes <sys/syscall.h> and <unistd.h> for it,
// outside its namespace.
const char* kAmxKernel = R"amx(
#if defined(PRISM_AMX) && defined(__x86_64__)
#define PRISM_TILE_LOAD(t, p, stride) __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(p), "r"((long)(stride)) : "memory")
#define PRISM_TILE_STORE(t, p, stride) __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(p), "r"((long)(stride)) : "memory")
#define PRISM_TILE_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::)
#define PRISM_TILE_DP(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
// Linux hands the tile state to a process that asks (arch_prctl ARCH_REQ_XCOMP_PERM for
// XFEATURE_XTILEDATA); where it refuses, the FMA kernel runs.
static bool prism_amx_request() { return syscall(SYS_arch_prctl, 0x1023, 18) == 0; }
static const bool prism_amx_ok = prism_amx_request();
struct prism_amx_config {
  unsigned char palette, start_row, reserved[14];
  unsigned short colsb[16];
  unsigned char rows[16];
};
// The tiles for blocks of R rows of C (1..16), loaded when a thread's last configuration differs.
static inline void prism_amx_configure(int rows) {
  static thread_local int current = 0;
  if (current == rows) return;
  prism_amx_config c{};
  c.palette = 1;
  for (int t = 0; t < 7; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = (unsigned char)(t < 5 ? rows : 16);
  }
  __asm__ volatile("ldtilecfg %0" ::"m"(c));
  current = rows;
}
typedef short prism_v32s __attribute__((vector_size(64)));
// The column (of 64) that lane j of C's tile t holds: the packing's in-lane interleaves.
static inline int prism_amx_column(int t, int j) { return 32 * (t / 2) + 8 * (j / 4) + 4 * (t % 2) + j % 4; }
// Pair-row p of B's rows k0 .. k0 + 31 (zeros from row K on) and columns n0 .. n0 + 63 (zeros
// from N on) in four tiles of 16 pair-rows: tile t, pair-row p holds (B[k0 + 2p][n], B[k0 + 2p + 1][n])
// for its 16 columns n (prism_amx_column).
template <long N, long K, long LDB>
static inline void prism_amx_pack_pair(const prism_bf16* __restrict B, long k0, int p, long n0, prism_bf16 (*__restrict out)[512]) {
  if (k0 + 32 <= K && n0 + 64 <= N) {
    const prism_bf16* r0 = B + (k0 + 2 * p) * LDB + n0;
    prism_v32s x0, x1, y0, y1;
    __builtin_memcpy(&x0, r0, 64);
    __builtin_memcpy(&x1, r0 + 32, 64);
    __builtin_memcpy(&y0, r0 + LDB, 64);
    __builtin_memcpy(&y1, r0 + LDB + 32, 64);
    // In-lane interleaves (vpunpck[lh]wd, one operation each; vpermt2w, which would keep the
    // column order, is three): tile 0 holds columns 0-3, 8-11, 16-19, 24-27, tile 1 columns
    // 4-7, 12-15, …, tiles 2 and 3 the same from 32; prism_amx_row puts C's back in order.
    const prism_v32s t0 = __builtin_shufflevector(x0, y0, 0, 32, 1, 33, 2, 34, 3, 35, 8, 40, 9, 41, 10, 42, 11, 43, 16, 48, 17, 49, 18, 50, 19, 51, 24, 56, 25, 57, 26, 58, 27, 59);
    const prism_v32s t1 = __builtin_shufflevector(x0, y0, 4, 36, 5, 37, 6, 38, 7, 39, 12, 44, 13, 45, 14, 46, 15, 47, 20, 52, 21, 53, 22, 54, 23, 55, 28, 60, 29, 61, 30, 62, 31, 63);
    const prism_v32s t2 = __builtin_shufflevector(x1, y1, 0, 32, 1, 33, 2, 34, 3, 35, 8, 40, 9, 41, 10, 42, 11, 43, 16, 48, 17, 49, 18, 50, 19, 51, 24, 56, 25, 57, 26, 58, 27, 59);
    const prism_v32s t3 = __builtin_shufflevector(x1, y1, 4, 36, 5, 37, 6, 38, 7, 39, 12, 44, 13, 45, 14, 46, 15, 47, 20, 52, 21, 53, 22, 54, 23, 55, 28, 60, 29, 61, 30, 62, 31, 63);
    __builtin_memcpy(out[0] + 32 * p, &t0, 64);
    __builtin_memcpy(out[1] + 32 * p, &t1, 64);
    __builtin_memcpy(out[2] + 32 * p, &t2, 64);
    __builtin_memcpy(out[3] + 32 * p, &t3, 64);
    return;
  }
  for (int t = 0; t < 4; ++t)
    for (int j = 0; j < 16; ++j)
      for (int h = 0; h < 2; ++h) {
        const long k = k0 + 2 * p + h, n = n0 + prism_amx_column(t, j);
        out[t][32 * p + 2 * j + h].bits = k < K && n < N ? B[k * LDB + n].bits : 0;
      }
}
typedef float prism_v16f __attribute__((vector_size(64)));
// Row r of C's four tiles as C's 64 columns (= or +=): tiles 0 and 1 interleave by 4 columns.
static inline void prism_amx_row(const float (*c)[256], int r, float* out, bool acc) {
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    prism_v16f lo, hi, o0, o1;
    __builtin_memcpy(&lo, c[2 * h] + 16 * r, 64);
    __builtin_memcpy(&hi, c[2 * h + 1] + 16 * r, 64);
    prism_v16f v0 = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    prism_v16f v1 = __builtin_shufflevector(lo, hi, 8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    if (acc) {
      __builtin_memcpy(&o0, out + 32 * h, 64);
      __builtin_memcpy(&o1, out + 32 * h + 16, 64);
      v0 += o0;
      v1 += o1;
    }
    __builtin_memcpy(out + 32 * h, &v0, 64);
    __builtin_memcpy(out + 32 * h + 16, &v1, 64);
  }
}
// C[M x N] (= or +=) A[M x K] @ B[K x N], all bf16 in, f32 out, on the tiles: per 16 rows of C,
// per 64 columns (a strip), C's four tiles stay in the unit over all of K while the strip's B is
// packed 32 rows at a time into L1; the next strip's lines of the same rows are prefetched into
// L2 (the strips of a row-strided B cross a page every row, where hardware prefetchers stop).
// Measured against packing a 128 x 512 panel into L2 first (rows read left to right): the strips
// were faster (a layer with an 8 x 4096 @ 4096 x 4096 bf16 matmul: 1.02 ms against 1.40, on a
// 2-core Sapphire Rapids).
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC>
static void prism_mm_amx(const prism_bf16* __restrict A, const prism_bf16* __restrict B, float* __restrict C) {
  constexpr long KFULL = K / 32 * 32;
  alignas(64) prism_bf16 b[4][512];
  alignas(64) prism_bf16 a_tail[16 * 32];
  alignas(64) float c[4][256];
  for (long m0 = 0; m0 < M; m0 += 16) {
    const int rows = M - m0 < 16 ? int(M - m0) : 16;
    prism_amx_configure(rows);
    if (KFULL < K)
      for (int r = 0; r < rows; ++r)
        for (long k = 0; k < 32; ++k) a_tail[r * 32 + k].bits = KFULL + k < K ? A[(m0 + r) * LDA + KFULL + k].bits : 0;
    for (long n0 = 0; n0 < N; n0 += 64) {
      PRISM_TILE_ZERO(0);
      PRISM_TILE_ZERO(1);
      PRISM_TILE_ZERO(2);
      PRISM_TILE_ZERO(3);
      for (long k0 = 0; k0 < K; k0 += 32) {
        if (n0 + 64 < N)
          for (int r = 0; r < 32 && k0 + r < K; ++r) {  // the next strip's two lines of this row
            __builtin_prefetch(B + (k0 + r) * LDB + n0 + 64, 0, 2);
            __builtin_prefetch(B + (k0 + r) * LDB + n0 + 96, 0, 2);
          }
        for (int p = 0; p < 16; ++p) prism_amx_pack_pair<N, K, LDB>(B, k0, p, n0, b);
        if (k0 < KFULL) PRISM_TILE_LOAD(4, A + m0 * LDA + k0, LDA * 2);
        else PRISM_TILE_LOAD(4, a_tail, 64);
        PRISM_TILE_LOAD(5, b[0], 64);
        PRISM_TILE_DP(0, 4, 5);
        PRISM_TILE_LOAD(6, b[1], 64);
        PRISM_TILE_DP(1, 4, 6);
        PRISM_TILE_LOAD(5, b[2], 64);
        PRISM_TILE_DP(2, 4, 5);
        PRISM_TILE_LOAD(6, b[3], 64);
        PRISM_TILE_DP(3, 4, 6);
      }
      PRISM_TILE_STORE(0, c[0], 64);
      PRISM_TILE_STORE(1, c[1], 64);
      PRISM_TILE_STORE(2, c[2], 64);
      PRISM_TILE_STORE(3, c[3], 64);
      for (int r = 0; r < rows; ++r) {
        float* out = C + (m0 + r) * LDC + n0;
        if (n0 + 64 <= N) {  // whole: the four tiles' rows unpermuted in vector registers
          prism_amx_row(c, r, out, ACC);
          continue;
        }
        for (int t = 0; t < 4; ++t)
          for (int q = 0; q < 16; ++q) {
            const long n = prism_amx_column(t, q);
            if (n0 + n < N) out[n] = ACC ? out[n] + c[t][r * 16 + q] : c[t][r * 16 + q];
          }
      }
    }
  }
}
template <typename TA, typename TB> struct prism_amx { static constexpr bool value = false; };
template <> struct prism_amx<prism_bf16, prism_bf16> { static constexpr bool value = true; };
#else
static constexpr bool prism_amx_ok = false;
template <typename TA, typename TB> struct prism_amx { static constexpr bool value = false; };
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, typename TA, typename TB>
static void prism_mm_amx(const TA*, const TB*, float*) {}
#endif
)amx";

}  // namespace prism::backend::cpu::detail
