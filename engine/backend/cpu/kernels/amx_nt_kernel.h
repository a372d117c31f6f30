
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
// More than 16 rows of A (a prefill) make several blocks of C^T columns: all of them pass over a
// strip's 32 rows of W in visits of 16 K steps, W's piece read from memory by the first block and
// from L1 by the others (each block's C^T tiles go to a buffer between visits), so W is read once
// whatever the rows, not once per block.
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, typename TA, typename TB>
static bool prism_mm_amx_nt(const TA* __restrict A, const TB* __restrict B, float* __restrict C) {
  constexpr long KT = prism_split_kind<TA, TB>::kt;  // K values a tile row holds
  constexpr bool two = prism_split_kind<TA, TB>::two;
  constexpr long STEPS = (K + KT - 1) / KT;           // tile rows of A^T
  constexpr long BLOCKS = (M + 15) / 16;              // of 16 rows of A (C^T's columns)
  constexpr long VISIT = BLOCKS == 1 ? STEPS : 16;    // K steps a block takes at a time
  // A^T's columns a block: one block has A's rows; several 16 each (a last block's missing rows
  // are zero columns). The tiles are configured for that many.
  constexpr int COLUMNS = BLOCKS == 1 ? int(M) : 16;
  constexpr size_t A_TILES = size_t(STEPS * BLOCKS * (two ? 2 : 1));
  void* const buffer = prism_thread_buffer<5>(sizeof(unsigned) * 256 * A_TILES + sizeof(float) * 512 * BLOCKS);
  if (!buffer) return false;
  // A^T's tiles (block b, K step s at ah[b * STEPS + s], and al's), then each block's two C^T tiles.
  unsigned(*const ah)[16][16] = static_cast<unsigned(*)[16][16]>(buffer);
  unsigned(*const al)[16][16] = ah + (two ? STEPS * BLOCKS : 0);
  float(*const c)[2][256] = reinterpret_cast<float(*)[2][256]>(ah + A_TILES);
  alignas(64) unsigned row_h[16], row_l[16];
  alignas(64) unsigned stage[2][256];
  prism_amx_configure(COLUMNS, true);
  for (long b = 0; b < BLOCKS; ++b)
    for (long k = 0; k < K; k += KT)
      for (int r = 0; r < COLUMNS; ++r) {
        const bool row = 16 * b + r < M;
        if (row) prism_split_a(A + (16 * b + r) * LDA + k, K - k, B, row_h, row_l);
        for (int i = 0; i < 16; ++i) {
          ah[b * STEPS + k / KT][i][r] = row ? row_h[i] : 0u;
          if (two) al[b * STEPS + k / KT][i][r] = row ? row_l[i] : 0u;
        }
      }
  for (long ns = 0; ns < N; ns += 32) {
    for (long s0 = 0; s0 < STEPS; s0 += VISIT)
      for (long b = 0; b < BLOCKS; ++b) {
        if (s0 == 0) {
          PRISM_TILE_ZERO(0);
          PRISM_TILE_ZERO(1);
        } else {
          PRISM_TILE_LOAD(0, c[b][0], 64);
          PRISM_TILE_LOAD(1, c[b][1], 64);
        }
        for (long s = s0; s < s0 + VISIT && s < STEPS; ++s) {
          const long k = s * KT, kr = K - k < KT ? K - k : KT;
          PRISM_TILE_LOAD(4, ah[b * STEPS + s], 64);
          if (two) PRISM_TILE_LOAD(5, al[b * STEPS + s], 64);
          PRISM_NT_PRODUCTS(0, 6);
          PRISM_NT_PRODUCTS(1, 7);
        }
        PRISM_TILE_STORE(0, c[b][0], 64);
        PRISM_TILE_STORE(1, c[b][1], 64);
      }
    for (long b = 0; b < BLOCKS; ++b)  // as a strip of prism_amx_out's, whose tiles 2-3 lie past its 32 columns (not read)
      prism_amx_out<prism_amx_transposed>(reinterpret_cast<const float(*)[4][256]>(c[b]), 1, M - 16 * b < 16 ? int(M - 16 * b) : 16, ns,
                                          ns + 32 < N ? ns + 32 : N, C + 16 * b * LDC, LDC, ACC);
  }
  return true;
}
template <> struct prism_amx_nt<prism_bf16, prism_bf16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_NT_ROWS; };
template <> struct prism_amx_nt<float, prism_bf16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_WIDE_ROWS; };
template <> struct prism_amx_nt<prism_f16, prism_f16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_F16_ROWS; };
template <> struct prism_amx_nt<float, prism_f16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_F16_ROWS; };
#endif
