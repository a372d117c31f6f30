
// An MR x NV-vector block of C in registers: loaded (ACC) or zero, and stored back.
template <int MR, int NV, bool ACC>
static inline __attribute__((always_inline)) void prism_block_load(vf (&c)[MR][NV], const float* __restrict C, long ldc) {
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) c[r][v] = ACC ? vload(C + r * ldc + v * kW) : vf{};
}
template <int MR, int NV>
static inline __attribute__((always_inline)) void prism_block_store(const vf (&c)[MR][NV], float* __restrict C, long ldc) {
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) vstore(C + r * ldc + v * kW, c[r][v]);
}

// bf16 x bf16 with AVX-512 BF16: vdpbf16ps multiplies pairs of bf16 along K and adds both
// (exact) products to an f32 lane, twice an f32 FMA's work per instruction, and nothing is widened.
// A's pair (k, k + 1) of a row is one 32-bit broadcast; B's rows k and k + 1 are interleaved into
// pairs as they are loaded; an odd K's last row pairs with zeros. PRISM_EMULATE_AVX512BF16 (set by
// $PRISM_CPU_EMULATE, for tests on CPUs without the instruction) computes the same sums with two
// FMAs. PRISM_NO_BF16_DOT (the CPU backend's, where the measured instruction is slower than
// widening: CpuFeatures::bf16_dot_peak_gflops) keeps bf16 x bf16 on widened FMAs.
// (vdpbf16ps flushes denormal inputs and results to zero: below 1e-38, inside tolerances.)
template <typename TA, typename TB> struct prism_dot { static constexpr bool value = false; };
#if ((defined(__AVX512BF16__) && !defined(PRISM_NO_BF16_DOT)) || defined(PRISM_EMULATE_AVX512BF16)) && defined(__AVX512F__)
template <> struct prism_dot<prism_bf16, prism_bf16> { static constexpr bool value = kW == 16; };
#endif
// A template, so that 32-byte vectors (AVX2 code on a CPU with AVX-512 BF16) never compile it.
template <typename V, typename U>
static inline V prism_dpbf16(V acc, U a, U b) {
#if defined(__AVX512BF16__) && !defined(PRISM_EMULATE_AVX512BF16)
  return (V)_mm512_dpbf16_ps((__m512)acc, (__m512bh)a, (__m512bh)b);
#else
  return vfma((V)(a & 0xffff0000u), (V)(b & 0xffff0000u), vfma((V)(a << 16), (V)(b << 16), acc));
#endif
}
// Lanes j of rows k and k + 1 (from r0 and r1) as pair j.
static inline vu prism_pairs(prism_vhi r0, prism_vhi r1) {
  return (vu)__builtin_shufflevector(r0, r1, PRISM_PAIR_LANES);
}

template <int MR, int NV, bool ACC, bool PF>
static inline __attribute__((always_inline)) void prism_mk_dot(long K, const prism_bf16* __restrict A, long lda, const prism_bf16* __restrict B,
                                                               long ldb, float* __restrict C, long ldc, const prism_bf16* P) {
  vf c[MR][NV];
  prism_block_load<MR, NV, ACC>(c, C, ldc);
  for (long k = 0; k < K; k += 2) {
    const bool odd = k + 1 == K;
    vu b[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      prism_vhi r0, r1{};
      __builtin_memcpy(&r0, B + k * ldb + v * kW, sizeof r0);
      if (!odd) __builtin_memcpy(&r1, B + (k + 1) * ldb + v * kW, sizeof r1);
      b[v] = prism_pairs(r0, r1);
    }
    if constexpr (PF) {
#pragma GCC unroll 16
      for (long l = 0; l < NV * kW; l += 32) {
        __builtin_prefetch(P + k * ldb + l, 0, 2);
        if (!odd) __builtin_prefetch(P + (k + 1) * ldb + l, 0, 2);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      uint32_t pair = A[r * lda + k].bits;
      if (!odd) pair |= uint32_t(A[r * lda + k + 1].bits) << 16;
      const vu a = prism_vbroadcast_u32(pair);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) c[r][v] = prism_dpbf16(c[r][v], a, b[v]);
    }
  }
  prism_block_store<MR, NV>(c, C, ldc);
}

// Whether a vf fits one vector register of the compiler's target (so an asm operand may hold it:
// not 64-byte vectors compiled for a CPU without AVX-512, as tests compile them).
#if defined(__AVX512F__)
constexpr bool prism_vf_in_register = true;
#elif defined(__AVX__)
constexpr bool prism_vf_in_register = sizeof(vf) <= 32;
#else
constexpr bool prism_vf_in_register = sizeof(vf) <= 16;
#endif

// PIN: B's vectors are held in registers (GCC otherwise folds them into the FMAs as memory
// operands, loading each once per row: the packed NT form's 6 x 2 blocks then ran 4% slower).
template <int MR, int NV, bool ACC, bool PF, bool PIN = false, typename TA, typename TB>
static inline __attribute__((always_inline)) void prism_mk_vectors(long K, const TA* __restrict A, long lda, const TB* __restrict B,
                                                                   long ldb, float* __restrict C, long ldc, const TB* P) {
  vf c[MR][NV];
  prism_block_load<MR, NV, ACC>(c, C, ldc);
  for (long k = 0; k < K; ++k) {
    vf b[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      b[v] = vload(B + k * ldb + v * kW);
      if constexpr (PIN && prism_vf_in_register) __asm__("" : "+v"(b[v]));
    }
    if constexpr (PF) {
#pragma GCC unroll 16
      for (long l = 0; l < NV * kW; l += 64 / long(sizeof(TB))) __builtin_prefetch(P + k * ldb + l, 0, 2);
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const vf a = vbroadcast(A[r * lda + k]);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) c[r][v] = vfma(a, b[v], c[r][v]);
    }
  }
  prism_block_store<MR, NV>(c, C, ldc);
}

template <int MR, int NV, bool ACC, bool PF = false, typename TA, typename TB>
static inline __attribute__((always_inline)) void prism_mk(long K, const TA* __restrict A, long lda, const TB* __restrict B,
                                                           long ldb, float* __restrict C, long ldc, const TB* P = nullptr) {
  if constexpr (prism_dot<TA, TB>::value) prism_mk_dot<MR, NV, ACC, PF>(K, A, lda, B, ldb, C, ldc, P);
  else prism_mk_vectors<MR, NV, ACC, PF>(K, A, lda, B, ldb, C, ldc, P);
}

// The last NT (< kW) columns, scalar.
template <int MR, int NT, bool ACC, typename TA, typename TB>
static inline void prism_mk_tail(long K, const TA* __restrict A, long lda, const TB* __restrict B, long ldb,
                                 float* __restrict C, long ldc) {
  float c[MR][NT];
  for (int r = 0; r < MR; ++r)
    for (int t = 0; t < NT; ++t) c[r][t] = ACC ? C[r * ldc + t] : 0.0f;
  for (long k = 0; k < K; ++k)
    for (int r = 0; r < MR; ++r) {
      const float a = A[r * lda + k];
      for (int t = 0; t < NT; ++t) c[r][t] += a * float(B[k * ldb + t]);
    }
  for (int r = 0; r < MR; ++r)
    for (int t = 0; t < NT; ++t) C[r * ldc + t] = c[r][t];
}

// Every column block, and within it every row block, of one K chunk; the last strip prefetches
// `after` (the next chunk's first strip, or what the caller reads next).
template <long M, long N, long LDA, long LDB, long LDC, bool ACC, int MR, int NV, typename TA, typename TB>
static inline void prism_mm_panel(long kc, const TA* __restrict A, const TB* __restrict B, float* __restrict C,
                                  const TB* after) {
  constexpr long NB = long(NV) * kW, NFULL = N / NB * NB, NVR = (N - NFULL) / kW, NT = (N - NFULL) % kW;
  constexpr long MFULL = M / MR * MR, MREM = M - MFULL;
  for (long j = 0; j < NFULL; j += NB) {
    // The first row block prefetches the strip of B four ahead: strips of a row-strided B cross a
    // page every row, where hardware prefetchers stop, and one strip's FMAs take less than a read
    // from memory. Into L2, not L1 (prefetcht1): a 16 KiB strip prefetched into L1 beside the
    // strip in use and the A rows evicts them. B's K chunks are not packed first: the copy's reads
    // do not overlap the FMAs the way these strips' do (docs/tuning.md, "The CPU matmul's blocks,
    // strips and chunks").
    const TB* next = j + 4 * NB < NFULL ? B + j + 4 * NB : NVR > 0 ? B + NFULL : after;
    if constexpr (MFULL > 0) {
      prism_mk<MR, NV, ACC, true>(kc, A, LDA, B + j, LDB, C + j, LDC, next);
      for (long i = MR; i < MFULL; i += MR) prism_mk<MR, NV, ACC>(kc, A + i * LDA, LDA, B + j, LDB, C + i * LDC + j, LDC);
      if constexpr (MREM > 0) prism_mk<int(MREM), NV, ACC>(kc, A + MFULL * LDA, LDA, B + j, LDB, C + MFULL * LDC + j, LDC);
    } else {
      prism_mk<int(MREM), NV, ACC, true>(kc, A, LDA, B + j, LDB, C + j, LDC, next);
    }
  }
  if constexpr (NVR > 0) {  // the narrower last strip, prefetching `after` from its first row block
    if constexpr (MFULL > 0) {
      prism_mk<MR, int(NVR), ACC, true>(kc, A, LDA, B + NFULL, LDB, C + NFULL, LDC, after);
      for (long i = MR; i < MFULL; i += MR) prism_mk<MR, int(NVR), ACC>(kc, A + i * LDA, LDA, B + NFULL, LDB, C + i * LDC + NFULL, LDC);
      if constexpr (MREM > 0)
        prism_mk<int(MREM), int(NVR), ACC>(kc, A + MFULL * LDA, LDA, B + NFULL, LDB, C + MFULL * LDC + NFULL, LDC);
    } else {
      prism_mk<int(MREM), int(NVR), ACC, true>(kc, A, LDA, B + NFULL, LDB, C + NFULL, LDC, after);
    }
  }
  if constexpr (NT > 0) {
    constexpr long J = NFULL + NVR * kW;
    for (long i = 0; i < MFULL; i += MR) prism_mk_tail<MR, int(NT), ACC>(kc, A + i * LDA, LDA, B + J, LDB, C + i * LDC + J, LDC);
    if constexpr (MREM > 0) prism_mk_tail<int(MREM), int(NT), ACC>(kc, A + MFULL * LDA, LDA, B + J, LDB, C + MFULL * LDC + J, LDC);
  }
}

// `after`: what the caller reads next (null: the rows right after B's K rows). PLD > 0: each K
// chunk of B is copied first into the thread's buffer 3, rows PLD apart (choose_blocking says
// when: B's rows share L1's sets and many row blocks pass over each strip).
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, int MR, int NV, long KC, long PLD = 0, typename TA, typename TB>
static inline void prism_mm_views(const TA* __restrict A, const TB* __restrict B, float* __restrict C, const TB* after) {
  if (!after) after = B + K * LDB;
  [[maybe_unused]] TB* p = nullptr;  // the copy's buffer (null: read in place, also where it could not be had)
  if constexpr (PLD > 0) p = static_cast<TB*>(prism_thread_buffer<3>(sizeof(TB) * (K < KC ? K : KC) * PLD));
  for (long k0 = 0; k0 < K; k0 += KC) {
    const long kc = K - k0 < KC ? K - k0 : KC;
    const TB* next = k0 + kc < K ? B + (k0 + kc) * LDB : after;
    if constexpr (PLD > 0) {
      if (p) {
        for (long r = 0; r < kc; ++r) __builtin_memcpy(p + r * PLD, B + (k0 + r) * LDB, sizeof(TB) * N);
        if (k0 == 0) prism_mm_panel<M, N, LDA, PLD, LDC, ACC, MR, NV>(kc, A, p, C, next);
        else prism_mm_panel<M, N, LDA, PLD, LDC, true, MR, NV>(kc, A + k0, p, C, next);
        continue;
      }
    }
    if (k0 == 0) prism_mm_panel<M, N, LDA, LDB, LDC, ACC, MR, NV>(kc, A, B, C, next);
    else prism_mm_panel<M, N, LDA, LDB, LDC, true, MR, NV>(kc, A + k0, B + k0 * LDB, C, next);
  }
}

// C[M x N] (= or +=) A[M x K] @ B[K x N] with B stored transposed: Bt[N x K] (row stride LDB), an
// nn.Linear weight read as W^T where it lies. An MR x NR block of C is MR*NR vector accumulators
// along K, where both operands are contiguous, summed across lanes at the end; the last K % kW
// products are scalar. A block of NR rows of Bt stays in L1 while every row block of A passes.
template <int MR, int NR, bool ACC, typename TA, typename TB>
static inline __attribute__((always_inline)) void prism_mk_nt(long K, const TA* __restrict A, long lda, const TB* __restrict B,
                                                              long ldb, float* __restrict C, long ldc) {
  vf c[MR][NR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) c[r][j] = vf{};
  long k = 0;
  for (; k + kW <= K; k += kW) {
    vf b[NR];
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) b[j] = vload(B + j * ldb + k);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const vf a = vload(A + r * lda + k);
#pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) c[r][j] = vfma(a, b[j], c[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    float sums[NR];
    int j = 0;
    for (; j + 4 <= NR; j += 4) prism_hsum4(c[r][j], c[r][j + 1], c[r][j + 2], c[r][j + 3], sums + j);
    for (; j < NR; ++j) sums[j] = prism_hsum(c[r][j]);
    for (j = 0; j < NR; ++j) {
      float s = sums[j];
      for (long t = k; t < K; ++t) s += float(A[r * lda + t]) * float(B[j * ldb + t]);
      C[r * ldc + j] = ACC ? C[r * ldc + j] + s : s;
    }
  }
}

// A's M x K block as f32 rows LDP floats apart (a copy away from 4 KiB aliasing, or A widened).
template <long M, long K, long LDA, long LDP, typename TA>
static inline void prism_copy_rows(const TA* __restrict A, float* __restrict P) {
  for (long i = 0; i < M; ++i)
    for (long k = 0; k < K; ++k) P[i * LDP + k] = A[i * LDA + k];
}

// Every MR-row block of A (the last one shorter) over a K chunk of a packed panel P, NV vectors a
// row, with B's vectors pinned.
template <long M, long LDA, long LDC, bool ACC, int MR, int NV>
static inline void prism_panel_rows(long kc, const float* __restrict A, const float* __restrict P, float* __restrict C) {
  constexpr long NB = long(NV) * kW, MFULL = M / MR * MR;
  for (long i = 0; i < MFULL; i += MR) prism_mk_vectors<MR, NV, ACC, false, true>(kc, A + i * LDA, LDA, P, NB, C + i * LDC, LDC, P);
  if constexpr (M > MFULL)
    prism_mk_vectors<int(M - MFULL), NV, ACC, false, true>(kc, A + MFULL * LDA, LDA, P, NB, C + MFULL * LDC, LDC, P);
}

// One panel of C's columns (NV vectors: NV * kW rows of Bt) over all of A, KC rows of K at a
// time: the chunk of the panel is transposed (and widened to f32) into P, K-major and NV * kW
// floats a row, and every MR-row block of A runs the outer-product kernel over it from L1/L2.
template <long M, long K, long LDA, long LDB, long LDC, bool ACC, int MR, int NV, long KC, typename TB>
static inline void prism_nt_panel(const float* __restrict A, const TB* __restrict B, float* __restrict C, float* __restrict P) {
  constexpr long NB = long(NV) * kW;
  for (long k0 = 0; k0 < K; k0 += KC) {
    const long kc = K - k0 < KC ? K - k0 : KC, kv = kc / kW * kW;
    for (long c0 = 0; c0 < NB; c0 += kW) {
      for (long k = 0; k < kv; k += kW) {
        vf r[kW];
#pragma GCC unroll 16
        for (int i = 0; i < int(kW); ++i) r[i] = vload(B + (c0 + i) * LDB + k0 + k);
        prism_transpose(r);
#pragma GCC unroll 16
        for (int i = 0; i < int(kW); ++i) vstore(P + (k + i) * NB + c0, r[i]);
      }
      for (long k = kv; k < kc; ++k)
        for (long i = 0; i < kW; ++i) P[k * NB + c0 + i] = float(B[(c0 + i) * LDB + k0 + k]);
    }
    if (ACC || k0 > 0) prism_panel_rows<M, LDA, LDC, true, MR, NV>(kc, A + k0, P, C);
    else prism_panel_rows<M, LDA, LDC, false, MR, NV>(kc, A + k0, P, C);
  }
}

// Columns [J0, N) of C by the NT kernel, one column a block: the last N % NR (or N % kW) columns.
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, int MR, long J0, typename TA, typename TB>
static inline void prism_nt_columns(const TA* __restrict A, const TB* __restrict B, float* __restrict C) {
  constexpr long MFULL = M / MR * MR;
  for (long j = J0; j < N; ++j) {
    for (long i = 0; i < MFULL; i += MR) prism_mk_nt<MR, 1, ACC>(K, A + i * LDA, LDA, B + j * LDB, LDB, C + i * LDC + j, LDC);
    if constexpr (M > MFULL) prism_mk_nt<int(M - MFULL), 1, ACC>(K, A + MFULL * LDA, LDA, B + j * LDB, LDB, C + MFULL * LDC + j, LDC);
  }
}

// The packed NT form, where many rows of A pass over each column (codegen's nt_packing says
// when): B^T's panels are transposed once per call into the thread's buffer 3 rather than summed
// across lanes per result element; the last N % kW columns take the NT kernel (MR x 1 blocks).
// False where the buffer could not be had (the caller reads B in place then). The measurements:
// docs/tuning.md, "The NT kernel's blocks".
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, int MR, int NV, long KC, typename TB>
static inline bool prism_mm_nt_packed(const float* __restrict A, const TB* __restrict B, float* __restrict C) {
  constexpr long NB = long(NV) * kW, NFULL = N / NB * NB, NVR = (N - NFULL) / kW;
  float* const P = static_cast<float*>(prism_thread_buffer<3>(sizeof(float) * (K < KC ? K : KC) * NB));
  if (!P) return false;
  for (long j = 0; j < NFULL; j += NB) prism_nt_panel<M, K, LDA, LDB, LDC, ACC, MR, NV, KC>(A, B + j * LDB, C + j, P);
  if constexpr (NVR > 0) prism_nt_panel<M, K, LDA, LDB, LDC, ACC, MR, int(NVR), KC>(A, B + NFULL * LDB, C + NFULL, P);
  prism_nt_columns<M, N, K, LDA, LDB, LDC, ACC, MR, NFULL + NVR * kW>(A, B, C);
  return true;
}

// WA: a 16-bit A is widened first, whole (rows K + 16 floats apart, in the thread's buffer 2), so
// that each step widens only B's vectors; the caller picks blocks for an f32 A then. K is not cut
// into chunks: whole rows of an nn.Linear weight stream better than pieces kept in L1 (same
// section, "The NT kernel's blocks"). PMR > 0: the packed form with PMR x PNV blocks and K chunks
// of PKC (a 16-bit A widened first for it too).
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, int MR, int NR, bool WA = false, int PMR = 0, int PNV = 0,
          long PKC = 0, typename TA, typename TB>
static inline void prism_mm_nt(const TA* __restrict A, const TB* __restrict B, float* __restrict C) {
  constexpr long MFULL = M / MR * MR, NFULL = N / NR * NR;
  if constexpr (prism_amx_nt<TA, TB>::value && M >= prism_amx_nt<TA, TB>::min_rows) {  // the tile unit, where the OS granted it
    if (prism_amx_ok && prism_mm_amx_nt<M, N, K, LDA, LDB, LDC, ACC>(A, B, C)) return;
  }
  if constexpr ((WA || PMR > 0) && sizeof(TA) == 2) {
    constexpr long LDW = K + 16;
    if (float* const w = static_cast<float*>(prism_thread_buffer<2>(sizeof(float) * M * LDW))) {
      prism_copy_rows<M, K, LDA, LDW>(A, w);
      return prism_mm_nt<M, N, K, LDW, LDB, LDC, ACC, MR, NR, false, PMR, PNV, PKC>(static_cast<const float*>(w), B, C);
    }
  }
  if constexpr (PMR > 0 && sizeof(TA) == sizeof(float)) {
    if (prism_mm_nt_packed<M, N, K, LDA, LDB, LDC, ACC, PMR, PNV, PKC>(A, B, C)) return;
  }
  for (long j = 0; j < NFULL; j += NR) {
    for (long i = 0; i < MFULL; i += MR) prism_mk_nt<MR, NR, ACC>(K, A + i * LDA, LDA, B + j * LDB, LDB, C + i * LDC + j, LDC);
    if constexpr (M > MFULL) prism_mk_nt<int(M - MFULL), NR, ACC>(K, A + MFULL * LDA, LDA, B + j * LDB, LDB, C + MFULL * LDC + j, LDC);
  }
  prism_nt_columns<M, N, K, LDA, LDB, LDC, ACC, MR, NFULL>(A, B, C);
}

// Rows of A a multiple of 4 KiB apart fall in one L1 set, which holds 8 lines: the broadcasts of
// MR rows then evict each other and B's strip. Such an A is copied first to rows K + 16 floats
// apart (same section, "L1's ways"), whole when it fits 64 KiB, else a slice of K chunks at a
// time as a 16-bit A is.
// A 16-bit A is widened (each element is broadcast N / NB times, and a broadcast of a 16-bit
// element is three operations on the FMA ports): whole when it fits, else a slice of K chunks at
// a time; not where vdpbf16ps takes its bf16 pairs.
template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, int MR, int NV, long KC, long PLD, typename TA, typename TB>
static inline void prism_mm_widened(const TA* __restrict A, const TB* __restrict B, float* __restrict C, const TB* after) {
  constexpr long LDP = K + 16;
  alignas(64) float packed[M * LDP];
  prism_copy_rows<M, K, LDA, LDP>(A, packed);
  prism_mm_views<M, N, K, LDP, LDB, LDC, ACC, MR, NV, KC, PLD>(packed, B, C, after);
}

template <long M, long N, long K, long LDA, long LDB, long LDC, bool ACC, int MR, int NV, long KC, long PLD = 0, typename TA, typename TB>
static inline void prism_mm(const TA* __restrict A, const TB* __restrict B, float* __restrict C, const TB* after = nullptr) {
  constexpr bool wide = sizeof(TA) == sizeof(float), fits = M * (K + 16) * 4 <= 65536;
  // K chunks a slice holds (at least one), and the slices: KS full ones, then KT rows.
  constexpr long SLICE = (65536 / (M * 4) - 16) / KC > 0 ? (65536 / (M * 4) - 16) / KC * KC : KC;
  constexpr long KS = K / SLICE, KT = K % SLICE;
  if constexpr (prism_amx<TA, TB>::value && M >= prism_amx<TA, TB>::min_rows) {  // the tile unit, where the OS granted it
    if (prism_amx_ok) return prism_mm_amx<M, N, K, LDA, LDB, LDC, ACC>(A, B, C);
  }
  if constexpr (prism_dot<TA, TB>::value) {  // vdpbf16ps takes A's bf16 pairs as they are
    prism_mm_views<M, N, K, LDA, LDB, LDC, ACC, MR, NV, KC, PLD>(A, B, C, after);
  } else if constexpr (wide && !(M > 1 && (LDA * 4) % 4096 == 0)) {  // f32 rows that do not alias: read in place
    prism_mm_views<M, N, K, LDA, LDB, LDC, ACC, MR, NV, KC, PLD>(A, B, C, after);
  } else if constexpr (fits) {
    prism_mm_widened<M, N, K, LDA, LDB, LDC, ACC, MR, NV, KC, PLD>(A, B, C, after);
  } else {
    if (!after) after = B + K * LDB;
    for (long s = 0; s < KS; ++s) {
      const TB* next = s + 1 < KS || KT > 0 ? B + (s + 1) * SLICE * LDB : after;
      if (s == 0) prism_mm_widened<M, N, SLICE, LDA, LDB, LDC, ACC, MR, NV, KC, PLD>(A, B, C, next);
      else prism_mm_widened<M, N, SLICE, LDA, LDB, LDC, true, MR, NV, KC, PLD>(A + s * SLICE, B + s * SLICE * LDB, C, next);
    }
    if constexpr (KT > 0)
      prism_mm_widened<M, N, KT, LDA, LDB, LDC, (KS > 0 || ACC), MR, NV, KC, PLD>(A + KS * SLICE, B + KS * SLICE * LDB, C, after);
  }
}
