
#if defined(PRISM_AMX) && defined(__x86_64__) && defined(__AVX512F__)
typedef short prism_v16s __attribute__((vector_size(32)));
// 16 values as f32.
static inline prism_v16f prism_split_f32(const prism_f16* p) {
  prism_v16s h;
  __builtin_memcpy(&h, p, 32);
  return __builtin_ia32_vcvtph2ps512_mask(h, prism_v16f{}, (unsigned short)0xffff, 4);
}
static inline prism_v16f prism_split_f32(const float* p) {
  prism_v16f x;
  __builtin_memcpy(&x, p, 64);
  return x;
}
// 16 values from p (n of them, then zeros) as f32 split into hi and lo (both with zero low
// halves). `guard`: an infinity's lo is 0, not inf - inf.
template <bool guard, typename T>
static inline void prism_split(const T* p, long n, prism_v16u& hi, prism_v16u& lo) {
  T tmp[16];
  if (n < 16) {
    for (long i = 0; i < 16; ++i) tmp[i] = i < n ? p[i] : T();
    p = tmp;
  }
  const prism_v16f x = prism_split_f32(p);
  const prism_v16u xb = (prism_v16u)x;
  hi = xb & 0xffff0000u;
  lo = (prism_v16u)(x - (prism_v16f)hi);
  if (sizeof(T) == 4) lo &= 0xffff0000u;  // an f16's rest fits a bf16; an f32's is truncated to one
  if (guard) lo = (xb & 0xffffu) != 0 ? lo : prism_v16u{};
}
// 16 values of f16 B from p (n of them, then zeros) as its staged words (hi, lo).
static inline void prism_split_b(const prism_f16* p, long n, unsigned* out) {
  prism_v16u hi, lo;
  prism_split<false>(p, n, hi, lo);
  const prism_v16u w = (hi >> 16) | lo;
  __builtin_memcpy(out, &w, 64);
}
// How B of each kind is staged, and A's tiles beside it: `kt` K values a tile row holds, and
// `two`: A has a hi tile (4) and a lo tile (5), else one (4).
//  - f16 B: a tile row is 16 K rows of one column as (hi, lo) words; A's tiles (a_hi, a_hi) and
//    (a_lo, a_lo) words.
//  - bf16 B: a tile row is 16 pairs of K rows (2i, 2i + 1) of one column; A's tiles its values
//    in K order, as they are (bf16 A) or as hi and lo (f32 A).
template <typename TA, typename TB> struct prism_split_kind;
template <typename TA> struct prism_split_kind<TA, prism_f16> {
  static constexpr long kt = 16;
  static constexpr bool two = true;
};
template <typename TA> struct prism_split_kind<TA, prism_bf16> {
  static constexpr long kt = 32;
  static constexpr bool two = sizeof(TA) == 4;
};
// A's kt values from p (n of them, then zeros) as one row of its tiles' words (ah, and al for two).
template <typename TA>
static inline void prism_split_a(const TA* p, long n, const prism_f16*, unsigned* ah, unsigned* al) {
  prism_v16u hi, lo;
  prism_split<true>(p, n, hi, lo);
  const prism_v16u h = hi | (hi >> 16), l = lo | (lo >> 16);
  __builtin_memcpy(ah, &h, 64);
  __builtin_memcpy(al, &l, 64);
}
static inline void prism_split_a(const float* p, long n, const prism_bf16*, unsigned* ah, unsigned* al) {
  for (int half = 0; half < 2; ++half) {
    prism_v16u hi, lo;
    prism_split<true>(p + 16 * half, n - 16 * half < 0 ? 0 : n - 16 * half, hi, lo);
    const prism_v16h h = __builtin_convertvector(hi >> 16, prism_v16h), l = __builtin_convertvector(lo >> 16, prism_v16h);
    __builtin_memcpy(ah + 8 * half, &h, 32);
    __builtin_memcpy(al + 8 * half, &l, 32);
  }
}
static inline void prism_split_a(const prism_bf16* p, long n, const prism_bf16*, unsigned* ah, unsigned*) {
  if (n >= 32) {
    __builtin_memcpy(ah, p, 64);
    return;
  }
  unsigned short values[32];  // (a memcpy: ah is read as words, so no 16-bit stores into it)
  for (long i = 0; i < 32; ++i) values[i] = i < n ? p[i].bits : 0;
  __builtin_memcpy(ah, values, 64);
}
// B's kt rows from b (kr of them, then zeros) by 64 columns (cols of them, then zeros) into the
// four tiles of stage (tile t: columns 16t .. 16t + 15).
template <long LDB>
static inline __attribute__((always_inline)) void prism_stage(const prism_f16* b, long kr, long cols, unsigned (*stage)[16][16]) {
  if (kr == 16 && cols == 64) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i)
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) prism_split_b(b + i * LDB + 16 * t, 16, stage[t][i]);
    return;
  }
  for (long i = 0; i < 16; ++i)
    for (int t = 0; t < 4; ++t) {
      const long n = i < kr ? cols - 16 * t : 0;
      prism_split_b(b + i * LDB + 16 * t, n < 0 ? 0 : n, stage[t][i]);
    }
}
typedef unsigned short prism_v32h __attribute__((vector_size(64)));
template <long LDB>
static inline __attribute__((always_inline)) void prism_stage(const prism_bf16* b, long kr, long cols, unsigned (*stage)[16][16]) {
  if (kr == 32 && cols == 64) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {  // 32 columns of rows 2i and 2i + 1 as two tile rows of pairs
        prism_v32h r0, r1;
        __builtin_memcpy(&r0, b + 2 * i * LDB + 32 * h, 64);
        __builtin_memcpy(&r1, b + (2 * i + 1) * LDB + 32 * h, 64);
        const prism_v32h lo = __builtin_shufflevector(r0, r1, 0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39, 8, 40, 9, 41, 10,
                                                      42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47);
        const prism_v32h hi = __builtin_shufflevector(r0, r1, 16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55, 24, 56,
                                                      25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63);
        __builtin_memcpy(stage[2 * h][i], &lo, 64);
        __builtin_memcpy(stage[2 * h + 1][i], &hi, 64);
      }
    return;
  }
  for (long i = 0; i < 16; ++i)
    for (long t = 0; t < 4; ++t)
      for (long j = 0; j < 16; ++j) {
        const long n = 16 * t + j;
        const unsigned r0 = 2 * i < kr && n < cols ? b[2 * i * LDB + n].bits : 0u, r1 = 2 * i + 1 < kr && n < cols ? b[(2 * i + 1) * LDB + n].bits : 0u;
        stage[t][i][j] = r0 | r1 << 16;
      }
}
// C tile c += A's tiles (4, and 5 where `two`) times the staged B tile at src, loaded into tile b.
#define PRISM_SPLIT_PRODUCTS(c, b, src) \
  PRISM_TILE_LOAD(b, src, 64);          \
  PRISM_TILE_DP(c, 4, b);               \
  if (two) PRISM_TILE_DP(c, 5, b)
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, typename TA, typename TB>
static void prism_mm_amx_split(const TA* __restrict A, const TB* __restrict B, float* __restrict C) {
  constexpr long KT = prism_split_kind<TA, TB>::kt;         // K values a tile row holds
  constexpr bool two = prism_split_kind<TA, TB>::two;
  constexpr long KB = K < 512 ? (K + KT - 1) / KT * KT : 512;  // K values in one A panel
  constexpr long AS = KB * 16 / KT + 16;                       // words per panel row
  constexpr long NB = PRISM_AMX_COLUMNS;
  // Where B is read from L2 (prism_amx_cached_b), a strip's C tiles stay over the whole panel, and
  // the panel's B is staged once into `staged` for every 16 rows of A (not again per block);
  // else K advances one tile row at a time over every strip, each piece staged as it is used.
  // (Out of memory for `staged`, the uncached order.)
  constexpr long STEPS = KB / KT;  // tile rows a panel
  alignas(64) unsigned ah[16 * AS], al[two ? 16 * AS : 16];  // A's tiles' words
  alignas(64) float c[NB / 64][4][256];
  // A strip's KT rows of B (tile t has columns 16t .. 16t + 15), two: one multiplied, one staged.
  alignas(64) unsigned stage[2][4][16][16];
  unsigned(*staged)[4][16][16] = nullptr;  // cached: strip s, tile row j at staged[s * STEPS + j]
  if (prism_amx_cached_b(M, K, N)) staged = static_cast<unsigned(*)[4][16][16]>(prism_amx_buffer(sizeof(stage[0]) * (NB / 64) * STEPS));
  const bool cached = staged != nullptr;
  long staged_n0 = -1, staged_kb = -1;
  prism_amx_blocks<M, N, K, KB, ACC, prism_amx_ordered>(c, NB, C, LDC, [&](long m0, int rows, long n0, int strips, long kb, long kn) {
    for (int r = 0; r < rows; ++r)
      for (long k = 0; k < kn; k += KT)
        prism_split_a(A + (m0 + r) * LDA + kb + k, kn - k, B, ah + r * AS + k * 16 / KT, al + (two ? r * AS + k * 16 / KT : 0));
    auto a_tiles = [&](long k) {
      PRISM_TILE_LOAD(4, ah + k * 16 / KT, AS * 4);
      if (two) PRISM_TILE_LOAD(5, al + k * 16 / KT, AS * 4);
    };
    auto piece = [&](int s, long k, unsigned(*into)[16][16]) {
      const long ns = n0 + 64 * s;
      prism_stage<LDB>(B + (kb + k) * LDB + ns, kn - k < KT ? kn - k : KT, N - ns < 64 ? N - ns : 64, into);
    };
    auto products = [&](unsigned(*src)[16][16]) {
      PRISM_SPLIT_PRODUCTS(0, 6, src[0]);
      PRISM_SPLIT_PRODUCTS(1, 7, src[1]);
      PRISM_SPLIT_PRODUCTS(2, 6, src[2]);
      PRISM_SPLIT_PRODUCTS(3, 7, src[3]);
    };
    if (cached) {
      if (n0 != staged_n0 || kb != staged_kb) {
        for (int s = 0; s < strips; ++s)
          for (long k = 0; k < kn; k += KT) piece(s, k, staged[s * STEPS + k / KT]);
        staged_n0 = n0;
        staged_kb = kb;
      }
      for (int s = 0; s < strips; ++s) {
        prism_amx_c_load(c[s], kb == 0);
        for (long k = 0; k < kn; k += KT) {
          a_tiles(k);
          products(staged[s * STEPS + k / KT]);
        }
        prism_amx_c_store(c[s]);
      }
      return;
    }
    // Each piece is staged one step ahead: the next strip's (or, after the last strip, the first
    // one's at the next K step) before this one's products, into the other buffer.
    int now = 0;
    piece(0, 0, stage[0]);
    for (long k = 0; k < kn; k += KT) {
      a_tiles(k);  // once for every strip
      for (int s = 0; s < strips; ++s) {
        const bool last = s + 1 == strips;
        if (!last || k + KT < kn) piece(last ? 0 : s + 1, last ? k + KT : k, stage[now ^ 1]);
        prism_amx_c_load(c[s], kb == 0 && k == 0);
        products(stage[now]);
        prism_amx_c_store(c[s]);
        now ^= 1;
      }
    }
  });
}
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC>
static void prism_mm_amx(const prism_f16* __restrict A, const prism_f16* __restrict B, float* __restrict C) {
  prism_mm_amx_split<M, N, K, LDA, LDB, LDC, ACC>(A, B, C);
}
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC>
static void prism_mm_amx(const float* __restrict A, const prism_f16* __restrict B, float* __restrict C) {
  prism_mm_amx_split<M, N, K, LDA, LDB, LDC, ACC>(A, B, C);
}
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC>
static void prism_mm_amx(const float* __restrict A, const prism_bf16* __restrict B, float* __restrict C) {
  prism_mm_amx_split<M, N, K, LDA, LDB, LDC, ACC>(A, B, C);
}
template <> struct prism_amx<prism_f16, prism_f16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_F16_ROWS; };
template <> struct prism_amx<float, prism_f16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_F16_ROWS; };
template <> struct prism_amx<float, prism_bf16> { static constexpr bool value = true; static constexpr long min_rows = PRISM_AMX_WIDE_ROWS; };
#endif
