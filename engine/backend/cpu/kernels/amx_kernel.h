
#if defined(PRISM_AMX) && defined(__x86_64__)
#define PRISM_TILE_LOAD(t, p, stride) __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(p), "r"((long)(stride)) : "memory")
#define PRISM_TILE_STORE(t, p, stride) __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(p), "r"((long)(stride)) : "memory")
#define PRISM_TILE_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::)
#define PRISM_TILE_DP(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
// Where more than 16 rows of A pass over B, all but the first block of 16 read B from L2 (as long
// as it fits), and a strip's C tiles stay in the tiles over a whole K panel: C's trip through L1
// costs more than B's scattered reads from L2. Else B streams in, and K advances in short steps
// over every strip (the read pattern hardware prefetchers follow; docs/tuning.md, "The flow of one
// `tune`", step 4). The rule: prism_amx_cached_b (amx_rules.h).
// Linux hands the tile state to a process that asks (arch_prctl ARCH_REQ_XCOMP_PERM for
// XFEATURE_XTILEDATA); where it refuses, the FMA kernel runs.
static bool prism_amx_request() { return syscall(SYS_arch_prctl, 0x1023, 18) == 0; }
static const bool prism_amx_ok = prism_amx_request();
struct prism_amx_config {
  unsigned char palette, start_row, reserved[14];
  unsigned short colsb[16];
  unsigned char rows[16];
};
// The tiles for blocks of R rows of C (1..16), loaded where the thread's configuration differs.
// `swapped` (the NT kernel's C^T = B^T A^T): C's tiles (0-3) and A's (4-5) hold 16 rows of R
// columns each, and B's (6-7) 16 full rows. The configuration is read back (sttilecfg), not
// remembered: another library on this thread (a runner loads candidate after candidate) may have
// changed it since.
static inline void prism_amx_configure(int rows, bool swapped = false) {
  prism_amx_config c{}, now;
  c.palette = 1;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = (unsigned short)(swapped && t < 6 ? 4 * rows : 64);
    c.rows[t] = (unsigned char)(swapped || t >= 6 ? 16 : rows);
  }
  __asm__ volatile("sttilecfg %0" : "=m"(now));
  if (__builtin_memcmp(&c, &now, sizeof c) != 0) __asm__ volatile("ldtilecfg %0" ::"m"(c));
}
// A thread's buffer for a staged B panel (amx_split_kernel.cpp; not prism_scratch: the block that
// calls the matmul holds that one); null out of memory.
static void* prism_amx_buffer(size_t bytes) { return prism_thread_buffer<1>(bytes); }
// Where B streams from memory, a kernel takes PRISM_AMX_STREAM_COLUMNS columns a block, so that
// each step down K reads B's rows that far in one run (what hardware prefetchers follow best); its C
// tiles, `bytes` for each column, are then too many for every caller's stack and lie in a thread's
// buffer. Out of memory, `narrow` (on the caller's stack) and PRISM_AMX_COLUMNS columns. Sets `nb`.
static inline float (*prism_amx_wide_c(long bytes, float (*narrow)[4][256], long& nb))[4][256] {
  nb = PRISM_AMX_STREAM_COLUMNS;
  if (void* p = prism_thread_buffer<4>(size_t(bytes * nb))) return static_cast<float(*)[4][256]>(p);
  nb = PRISM_AMX_COLUMNS;
  return narrow;
}
// A strip's four C tiles (0-3): zeros or its L1 buffer's, and back to it.
static inline __attribute__((always_inline)) void prism_amx_c_load(float (*c)[256], bool zero) {
  if (zero) {
    PRISM_TILE_ZERO(0);
    PRISM_TILE_ZERO(1);
    PRISM_TILE_ZERO(2);
    PRISM_TILE_ZERO(3);
  } else {
    PRISM_TILE_LOAD(0, c[0], 64);
    PRISM_TILE_LOAD(1, c[1], 64);
    PRISM_TILE_LOAD(2, c[2], 64);
    PRISM_TILE_LOAD(3, c[3], 64);
  }
}
static inline __attribute__((always_inline)) void prism_amx_c_store(float (*c)[256]) {
  PRISM_TILE_STORE(0, c[0], 64);
  PRISM_TILE_STORE(1, c[1], 64);
  PRISM_TILE_STORE(2, c[2], 64);
  PRISM_TILE_STORE(3, c[3], 64);
}
typedef float prism_v16f __attribute__((vector_size(64)));
typedef unsigned short prism_v16h __attribute__((vector_size(32)));
typedef unsigned prism_v16u __attribute__((vector_size(64)));
// 32 columns of C (= or +=) from 16 even ones and 16 odd ones.
static inline __attribute__((always_inline)) void prism_amx_interleave(const float* even_in, const float* odd_in, float* out, bool acc) {
  prism_v16f even, odd, o0, o1;
  __builtin_memcpy(&even, even_in, 64);
  __builtin_memcpy(&odd, odd_in, 64);
  prism_v16f v0 = __builtin_shufflevector(even, odd, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  prism_v16f v1 = __builtin_shufflevector(even, odd, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  if (acc) {
    __builtin_memcpy(&o0, out, 64);
    __builtin_memcpy(&o1, out + 16, 64);
    v0 += o0;
    v1 += o1;
  }
  __builtin_memcpy(out, &v0, 64);
  __builtin_memcpy(out + 16, &v1, 64);
}
// Row r of a strip's four C tiles as its 64 columns (= or +=): tile 2h holds the even columns of
// 32h .. 32h + 31, tile 2h + 1 the odd ones.
static inline void prism_amx_row(const float (*c)[256], int r, float* out, bool acc) {
  prism_amx_interleave(c[0] + 16 * r, c[1] + 16 * r, out, acc);
  prism_amx_interleave(c[2] + 16 * r, c[3] + 16 * r, out + 32, acc);
}
// How a block's C tiles hold its values: tile 2h the even columns of 32h .. 32h + 31 and 2h + 1
// the odd ones (the bf16 kernel's), tile t columns 16t .. 16t + 15 (the split kernel's), or those
// transposed: 16 columns of C as its rows, C's rows as its columns (the NT kernel's).
enum prism_amx_layout { prism_amx_paired, prism_amx_ordered, prism_amx_transposed };
// A block's C tiles (`strips` strips of 64 columns from column n0 of C, `rows` rows from C) into C
// (= or +=).
template <prism_amx_layout L>
static inline __attribute__((always_inline)) void prism_amx_out(const float (*c)[4][256], int strips, int rows, long n0, long N, float* C,
                                                              long ldc, bool acc) {
  for (int s = 0; s < strips; ++s) {
    const long ns = n0 + 64 * s;
    if (L == prism_amx_transposed) {
      for (int t = 0; t < 4; ++t)
        for (long j = 0; j < 16 && ns + 16 * t + j < N; ++j)
          for (int r = 0; r < rows; ++r) {
            float* out = C + r * ldc + ns + 16 * t + j;
            *out = acc ? *out + c[s][t][16 * j + r] : c[s][t][16 * j + r];
          }
      continue;
    }
    for (int r = 0; r < rows; ++r) {
      float* out = C + r * ldc + ns;
      if (ns + 64 <= N && L == prism_amx_paired) {
        prism_amx_row(c[s], r, out, acc);
        continue;
      }
      if (ns + 64 <= N) {
#pragma GCC unroll 4
        for (int t = 0; t < 4; ++t) {
          prism_v16f v, o;
          __builtin_memcpy(&v, c[s][t] + 16 * r, 64);
          if (acc) {
            __builtin_memcpy(&o, out + 16 * t, 64);
            v += o;
          }
          __builtin_memcpy(out + 16 * t, &v, 64);
        }
        continue;
      }
      for (int t = 0; t < 4; ++t)
        for (int q = 0; q < 16; ++q) {
          const long n = L == prism_amx_paired ? 32 * (t / 2) + 2 * q + t % 2 : 16 * t + q;
          if (ns + n < N) out[n] = acc ? out[n] + c[s][t][r * 16 + q] : c[s][t][r * 16 + q];
        }
    }
  }
}
// The blocks every kernel walks: 16 rows of C at a time (the tiles configured for them), its
// columns NB at a time (c holds NB / 64 strips), and K in panels of KB, each multiplied by
// `panel(m0, rows, n0, strips, kb, kn)` into the block's C tiles in c (`strips` strips of 64
// columns, `kn` rows of K from kb); then the block goes into C (prism_amx_out, in layout L).
template <long M, long N, long K, long KB, bool ACC, prism_amx_layout L, typename Panel>
static inline __attribute__((always_inline)) void prism_amx_blocks(float (*c)[4][256], long NB, float* C, long ldc, Panel&& panel) {
  for (long m0 = 0; m0 < M; m0 += 16) {
    const int rows = M - m0 < 16 ? int(M - m0) : 16;
    prism_amx_configure(rows, L == prism_amx_transposed);
    for (long n0 = 0; n0 < N; n0 += NB) {
      const int strips = int(N - n0 < NB ? (N - n0 + 63) / 64 : NB / 64);
      for (long kb = 0; kb < K; kb += KB) panel(m0, rows, n0, strips, kb, K - kb < KB ? K - kb : KB);
      prism_amx_out<L>(c, strips, rows, n0, N, C + m0 * ldc, ldc, ACC);
    }
  }
}
// C[M x N] (= or +=) A[M x K] @ B[K x N], all bf16 in, f32 out, on the tiles, B read where it
// lies. A tile product pairs its A row's values (2j, 2j + 1) with the pair (2n, 2n + 1) of its
// B row j; loaded straight from B, that pair is two columns of one row. So A goes into a panel
// where each value sits beside a zero: the tile loaded from a value gives B's even columns, the
// one loaded a place earlier the odd ones (half the unit's products are zeros; it has 14x the
// FMAs' rate to spare). Nothing is repacked and the vector units are free.
// Order: per 16 rows of C and PRISM_AMX_STREAM_COLUMNS columns (prism_amx_wide_c), K advances 64
// rows at a time over every 64-column strip of the block (each strip's four C tiles come from and
// go back to a buffer), so B's rows are read 4 KB after 4 KB, which hardware prefetchers follow.
// C's trip through the buffer costs time per strip visit (tiles do not forward), hence more than
// 16 rows a visit: 32 with 512 columns a block, 64 with 2048 (docs/tuning.md, "The AMX kernels'
// order").
// Rows past K and columns past N go through a zero-padded copy (16 rows x 64 columns).
// The split and NT kernels (amx_split_kernel.cpp, amx_nt_kernel.cpp) are defined only where
// AVX-512 is compiled in; declared always, so that a caller's discarded branch names them in an
// AVX2 build too (a CPU without AVX-512, or a source for 32-byte vectors).
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, typename TA, typename TB>
static void prism_mm_amx_split(const TA* __restrict A, const TB* __restrict B, float* __restrict C);
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, typename TA, typename TB>
static bool prism_mm_amx_nt(const TA* __restrict A, const TB* __restrict B, float* __restrict C);
// A row's kn values as 32-bit words, each in the low (SHIFT 0) or the high half (SHIFT 16) beside a
// zero, then zero words up to `words`: an A panel row for tiles loaded where B lies.
template <int SHIFT>
static inline void prism_amx_a_words(const prism_bf16* ar, long kn, unsigned* out, long words) {
  long k = 0;
  for (; k + 16 <= kn; k += 16) {
    prism_v16h h;
    __builtin_memcpy(&h, ar + k, 32);
    const prism_v16u w = __builtin_convertvector(h, prism_v16u) << SHIFT;
    __builtin_memcpy(out + k, &w, 64);
  }
  for (; k < words; ++k) out[k] = k < kn ? unsigned(ar[k].bits) << SHIFT : 0u;
}
// B's 16 x 64 tile at row k, column ns of B (rows past K and columns past N zeros, through `edge`):
// where to load it from, and the row stride in bytes.
template <long N, long K, long LDB>
static inline const prism_bf16* prism_amx_b_tile(const prism_bf16* B, long k, long ns, prism_bf16* edge, long& stride) {
  const prism_bf16* b = B + k * LDB + ns;
  stride = LDB * 2;
  if (k + 16 <= K && ns + 64 <= N) return b;
  for (long i = 0; i < 16; ++i)
    for (long j = 0; j < 64; ++j) edge[i * 64 + j].bits = k + i < K && ns + j < N ? b[i * LDB + j].bits : 0;
  stride = 128;
  return edge;
}
// One visit of a 64-column strip from column ns of B: its four C tiles (zeros where `zero`, else
// from cs) take B's rows kb + kv .. (KV of them, not past kb + kn) against A's panel `a` (AS values a
// row, each beside a zero: loaded a place later, its (a, 0) pairs give the even columns, else its
// (0, a) pairs the odd ones), and go back to cs.
template <long N, long K, long LDB, long AS, long KV>
static inline __attribute__((always_inline)) void prism_amx_paired_visit(const prism_bf16* a, const prism_bf16* B, long kb, long kv, long kn,
                                                                       long ns, prism_bf16* edge, float (*cs)[256], bool zero) {
  prism_amx_c_load(cs, zero);
  for (long k16 = kv; k16 < kv + KV && k16 < kn; k16 += 16) {
    long stride;
    const prism_bf16* b = prism_amx_b_tile<N, K, LDB>(B, kb + k16, ns, edge, stride);
    PRISM_TILE_LOAD(4, a + 2 * k16 + 1, AS * 2);  // (a, 0) pairs: even columns
    PRISM_TILE_LOAD(5, a + 2 * k16, AS * 2);      // (0, a) pairs: odd columns
    PRISM_TILE_LOAD(6, b, stride);
    PRISM_TILE_DP(0, 4, 6);
    PRISM_TILE_DP(1, 5, 6);
    PRISM_TILE_LOAD(7, b + 32, stride);
    PRISM_TILE_DP(2, 4, 7);
    PRISM_TILE_DP(3, 5, 7);
  }
  prism_amx_c_store(cs);
}
// prism_mm_amx for A of at most 8 rows (decode): the A tile holds each row twice, row r as (a, 0)
// pairs and row M + r as (0, a), so one product gives a C tile whose row r holds C's even columns
// and row M + r its odd ones; a 64-column strip takes two C tiles, not four, and every product
// fills the tile unit's 16 rows (with the four-tile layout an 8-row A leaves half of them idle).
// A visit takes two strips (C tiles 0-1 and 2-3) for 32 rows of K, A's tiles alternating
// between 4 and 5 so that the next one loads while the last products run; K advances over the
// strips of PRISM_AMX_STREAM_COLUMNS columns (prism_amx_wide_c; docs/tuning.md, "The AMX
// kernels' order").
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC>
static void prism_mm_amx_stacked(const prism_bf16* __restrict A, const prism_bf16* __restrict B, float* __restrict C) {
  static_assert(M <= 8, "two copies of A's rows fill a tile");
  constexpr long KB = K < 512 ? (K + 31) / 32 * 32 : 512;  // K values in one A panel
  constexpr long AS = KB + 16;                              // words per panel row
  constexpr long KV = 32;
  alignas(64) unsigned a[2 * M * AS];
  alignas(64) float narrow[PRISM_AMX_COLUMNS / 128][4][256];
  long NB;  // a visit's two strips: strip 2p in c[p][0-1], 2p + 1 in c[p][2-3]
  float(*const c)[4][256] = prism_amx_wide_c(sizeof(float) * 4 * 256 / 128, narrow, NB);
  alignas(64) prism_bf16 edge[16 * 64];
  prism_amx_configure(int(2 * M));
  for (long n0 = 0; n0 < N; n0 += NB) {
    const int strips = int(N - n0 < NB ? (N - n0 + 63) / 64 : NB / 64);
    for (long kb = 0; kb < K; kb += KB) {
      const long kn = K - kb < KB ? K - kb : KB;
      for (long r = 0; r < M; ++r) {  // the panel: row r (a, 0) words, row M + r (0, a)
        prism_amx_a_words<0>(A + r * LDA + kb, kn, a + r * AS, AS);
        prism_amx_a_words<16>(A + r * LDA + kb, kn, a + (M + r) * AS, AS);
      }
      for (long kv = 0; kv < kn; kv += KV)
        for (int s = 0; s < strips; s += 2) {
          const bool two = s + 1 < strips;
          const long ns = n0 + 64 * s;
          prism_amx_c_load(c[s / 2], kb == 0 && kv == 0);  // without a second strip, tiles 2-3 are unused
          // 16 rows of K from k16 into the two strips' C tiles, A in tile `t`.
#define PRISM_STACKED_STEP(t)                                                      \
  {                                                                                \
    long stride;                                                                   \
    const prism_bf16* b = prism_amx_b_tile<N, K, LDB>(B, kb + k16, ns, edge, stride); \
    PRISM_TILE_LOAD(t, a + k16, AS * 4);                                           \
    PRISM_TILE_LOAD(6, b, stride);                                                 \
    PRISM_TILE_DP(0, t, 6);                                                        \
    PRISM_TILE_LOAD(7, b + 32, stride);                                            \
    PRISM_TILE_DP(1, t, 7);                                                        \
    if (two) {                                                                     \
      b = prism_amx_b_tile<N, K, LDB>(B, kb + k16, ns + 64, edge, stride);         \
      PRISM_TILE_LOAD(6, b, stride);                                               \
      PRISM_TILE_DP(2, t, 6);                                                      \
      PRISM_TILE_LOAD(7, b + 32, stride);                                          \
      PRISM_TILE_DP(3, t, 7);                                                      \
    }                                                                              \
  }
          for (long k16 = kv; k16 < kv + KV && k16 < kn; k16 += 16) {
            PRISM_STACKED_STEP(4);
            k16 += 16;
            if (k16 < kn) PRISM_STACKED_STEP(5);
          }
#undef PRISM_STACKED_STEP
          prism_amx_c_store(c[s / 2]);
        }
    }
    for (int s = 0; s < strips; ++s) {
      const long ns = n0 + 64 * s;
      const float(*t)[256] = c[s / 2] + 2 * (s % 2);  // the strip's two tiles
      for (long r = 0; r < M; ++r) {
        float* out = C + r * LDC + ns;
        if (ns + 64 <= N) {  // tile h: C's even columns of 32h .. 32h + 31 in row r, the odd ones in row M + r
          prism_amx_interleave(t[0] + 16 * r, t[0] + 16 * (M + r), out, ACC);
          prism_amx_interleave(t[1] + 16 * r, t[1] + 16 * (M + r), out + 32, ACC);
          continue;
        }
        for (long n = 0; ns + n < N; ++n) {
          const float v = t[n / 32][16 * (n % 2 ? M + r : r) + n % 32 / 2];
          out[n] = ACC ? out[n] + v : v;
        }
      }
    }
  }
}
// prism_mm_amx for more than 16 rows of A against a B that streams from memory (a prefill): every
// block of 16 rows passes over each visit's piece of B (64 rows of K by 64 columns, 8 KB: from
// memory for the first block, from L1 for the others), so B is read once rather than once per
// block; each block's C tiles go through a buffer between visits. A last block's missing rows are
// zero rows of its A panel (the tiles stay configured for 16 rows). False (nothing done) where the
// buffer is out of memory.
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC>
static bool prism_mm_amx_rows(const prism_bf16* __restrict A, const prism_bf16* __restrict B, float* __restrict C) {
  constexpr long BLOCKS = (M + 15) / 16;
  constexpr long KB = K < 512 ? (K + 15) / 16 * 16 : 512;  // K values in one A panel
  constexpr long AS = 2 * KB + 32;                          // a panel row: 0, a0, 0, a1, ..., zeros
  constexpr long NB = PRISM_AMX_COLUMNS, KV = 64;
  constexpr size_t A_BYTES = sizeof(prism_bf16) * 16 * BLOCKS * AS, C_BYTES = sizeof(float) * 1024 * BLOCKS * (NB / 64);
  void* const buffer = prism_thread_buffer<4>(A_BYTES + C_BYTES);
  if (!buffer) return false;
  prism_bf16* const a = static_cast<prism_bf16*>(buffer);                                   // block b's panel from row 16 b
  float(*const c)[NB / 64][4][256] = reinterpret_cast<float(*)[NB / 64][4][256]>(a + 16 * BLOCKS * AS);  // block b's strips
  alignas(64) prism_bf16 edge[16 * 64];
  prism_amx_configure(16);
  for (long n0 = 0; n0 < N; n0 += NB) {
    const int strips = int(N - n0 < NB ? (N - n0 + 63) / 64 : NB / 64);
    for (long kb = 0; kb < K; kb += KB) {
      const long kn = K - kb < KB ? K - kb : KB;
      for (long r = 0; r < 16 * BLOCKS; ++r)  // A's values in the high halves of 32-bit words; zeros past M
        prism_amx_a_words<16>(A + (r < M ? r * LDA + kb : 0), r < M ? kn : 0, reinterpret_cast<unsigned*>(a + r * AS), AS / 2);
      for (long kv = 0; kv < kn; kv += KV)
        for (int s = 0; s < strips; ++s) {
          const long ns = n0 + 64 * s;
          for (long b = 0; b < BLOCKS; ++b)
            prism_amx_paired_visit<N, K, LDB, AS, KV>(a + 16 * b * AS, B, kb, kv, kn, ns, edge, c[b][s], kb == 0 && kv == 0);
        }
    }
    for (long b = 0; b < BLOCKS; ++b)
      prism_amx_out<prism_amx_paired>(c[b], strips, M - 16 * b < 16 ? int(M - 16 * b) : 16, n0, N, C + 16 * b * LDC, LDC, ACC);
  }
  return true;
}
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC>
static void prism_mm_amx(const prism_bf16* __restrict A, const prism_bf16* __restrict B, float* __restrict C) {
#if defined(__AVX512F__)
  if constexpr (M <= 8) return prism_mm_amx_stacked<M, N, K, LDA, LDB, LDC, ACC>(A, B, C);
  // Where B stays in L2 for several blocks of rows, the tile products count (the zeros beside A's
  // values double them) and B's rows are paired once for all of them (amx_split_kernel.cpp).
  if constexpr (prism_amx_cached_b(M, K, N)) return prism_mm_amx_split<M, N, K, LDA, LDB, LDC, ACC>(A, B, C);
  if constexpr (M > 16)
    if (prism_mm_amx_rows<M, N, K, LDA, LDB, LDC, ACC>(A, B, C)) return;
#endif
  constexpr long KB = K < 512 ? (K + 15) / 16 * 16 : 512;  // K values in one A panel
  constexpr long AS = 2 * KB + 32;                          // a panel row: 0, a0, 0, a1, ..., zeros
  constexpr long KV = prism_amx_cached_b(M, K, N) ? KB : 64;
  alignas(64) prism_bf16 a[16 * AS];
  alignas(64) float narrow[PRISM_AMX_COLUMNS / 64][4][256];
  long NB = PRISM_AMX_COLUMNS;
  float(*const c)[4][256] = prism_amx_cached_b(M, K, N) ? narrow : prism_amx_wide_c(sizeof(float) * 4 * 256 / 64, narrow, NB);
  alignas(64) prism_bf16 edge[16 * 64];
  prism_amx_blocks<M, N, K, KB, ACC, prism_amx_paired>(c, NB, C, LDC, [&](long m0, int rows, long n0, int strips, long kb, long kn) {
    for (int r = 0; r < rows; ++r)  // the panel: A's values in the high halves of 32-bit words
      prism_amx_a_words<16>(A + (m0 + r) * LDA + kb, kn, reinterpret_cast<unsigned*>(a + r * AS), AS / 2);
    for (long kv = 0; kv < kn; kv += KV)
      for (int s = 0; s < strips; ++s)
        prism_amx_paired_visit<N, K, LDB, AS, KV>(a, B, kb, kv, kn, n0 + 64 * s, edge, c[s], kb == 0 && kv == 0);
  });
}
// Whether A x B (prism_amx) and A x Bt^T (prism_amx_nt) run on the tiles, and from how many rows
// of A (fewer take the vector kernels).
template <typename TA, typename TB> struct prism_amx { static constexpr bool value = false; static constexpr long min_rows = 1; };
template <typename TA, typename TB> struct prism_amx_nt { static constexpr bool value = false; static constexpr long min_rows = 1; };
template <> struct prism_amx<prism_bf16, prism_bf16> { static constexpr bool value = true; static constexpr long min_rows = 1; };
#else
static constexpr bool prism_amx_ok = false;
template <typename TA, typename TB> struct prism_amx { static constexpr bool value = false; static constexpr long min_rows = 1; };
template <typename TA, typename TB> struct prism_amx_nt { static constexpr bool value = false; static constexpr long min_rows = 1; };
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, typename TA, typename TB>
static void prism_mm_amx(const TA*, const TB*, float*) {}
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, typename TA, typename TB>
static bool prism_mm_amx_nt(const TA*, const TB*, float*) { return false; }
#endif
