
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <immintrin.h>
#include <omp.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__AVX512F__)
typedef __m512 vec;
static inline vec vset(float x) { return _mm512_set1_ps(x); }
static inline vec vfma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
static inline vec vadd(vec a, vec b) { return _mm512_add_ps(a, b); }
static inline vec vload(const float* p) { return _mm512_loadu_ps(p); }
static inline float vsum(vec a) { return _mm512_reduce_add_ps(a); }
#elif defined(__AVX2__) && defined(__FMA__)
typedef __m256 vec;
static inline vec vset(float x) { return _mm256_set1_ps(x); }
static inline vec vfma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
static inline vec vadd(vec a, vec b) { return _mm256_add_ps(a, b); }
static inline vec vload(const float* p) { return _mm256_loadu_ps(p); }
static inline float vsum(vec a) { float t[8]; _mm256_storeu_ps(t, a); float s = 0; for (float x : t) s += x; return s; }
#else
typedef __m128 vec;
static inline vec vset(float x) { return _mm_set1_ps(x); }
static inline vec vfma(vec a, vec b, vec c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
static inline vec vadd(vec a, vec b) { return _mm_add_ps(a, b); }
static inline vec vload(const float* p) { return _mm_loadu_ps(p); }
static inline float vsum(vec a) { float t[4]; _mm_storeu_ps(t, a); return t[0] + t[1] + t[2] + t[3]; }
#endif
static const int kLanes = int(sizeof(vec) / sizeof(float));

static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
// The calling thread's CPU time: what it ran, not what other processes took meanwhile.
static double cpu_now() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

volatile float g_sink;

// At least this many bytes a trial, in sweeps over the array: a sweep of a set the first level
// holds takes less than a microsecond, too short to time.
static const long long kTrialBytes = 8LL << 20;

extern "C" double prism_measure_read_gbs(long long bytes, int threads, int repeats) {
  const long long n = bytes / (long long)sizeof(float) / (8 * kLanes) * (8 * kLanes);
  if (n <= 0) return 0;
  const long long sweeps = std::max(1LL, kTrialBytes / (n * (long long)sizeof(float)));
  // In huge pages, as the runner hands kernels their inputs: with 4 KiB pages, TLB misses cut a
  // large stream well below what it reads in 2 MiB pages (docs/tuning.md, "Peaks").
  const size_t huge = size_t(2) << 20, size = (size_t(n) * sizeof(float) + huge - 1) / huge * huge;
  float* data = static_cast<float*>(std::aligned_alloc(huge, size));
  if (!data) return 0;
  madvise(data, size, MADV_HUGEPAGE);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (long long i = 0; i < n; ++i) data[i] = 1.0f;
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    float total = 0;
    double slowest = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total) reduction(max : slowest)
    {
      int t = omp_get_thread_num(), nt = omp_get_num_threads();
#pragma omp barrier
      double t0 = now();
      long long blocks = n / (8 * kLanes);
      long long lo = blocks * t / nt * 8 * kLanes, hi = blocks * (t + 1) / nt * 8 * kLanes;
      vec a0 = vset(0), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
      for (long long s = 0; s < sweeps; ++s)
        for (long long i = lo; i < hi; i += 8 * kLanes) {
          const float* p = data + i;
          a0 = vadd(a0, vload(p)); a1 = vadd(a1, vload(p + kLanes));
          a2 = vadd(a2, vload(p + 2 * kLanes)); a3 = vadd(a3, vload(p + 3 * kLanes));
          a4 = vadd(a4, vload(p + 4 * kLanes)); a5 = vadd(a5, vload(p + 5 * kLanes));
          a6 = vadd(a6, vload(p + 6 * kLanes)); a7 = vadd(a7, vload(p + 7 * kLanes));
        }
      total += vsum(vadd(vadd(vadd(a0, a1), vadd(a2, a3)), vadd(vadd(a4, a5), vadd(a6, a7))));
      slowest = now() - t0;
    }
    g_sink = total;
    best = std::min(best, slowest);
  }
  std::free(data);
  return double(n) * sizeof(float) * double(sweeps) / best / 1e9;
}

#define CHAINS 10
// Per-thread rates, summed: each thread times its own chains by its CPU time, so a thread that
// the OS started late or stopped (another process on its core) does not make the rate look low.
// FMA units are per core, so the per-core rates add up. `step(c, a, b)` is one instruction on
// chain c; `flops` what it does per lane.
template <class Step>
static double chains_trial(long long iters, int threads, double flops, float a0, float b0, Step step) {
  double rate = 0;
  float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total, rate)
  {
    volatile float va = a0, vb = b0;
    vec a = vset(va), b = vset(vb);
    vec c[CHAINS];
    for (int j = 0; j < CHAINS; ++j) c[j] = vset(float(j));
#pragma omp barrier
    double t0 = cpu_now();
    for (long long i = 0; i < iters; ++i)
      for (int j = 0; j < CHAINS; ++j) c[j] = step(c[j], a, b);
    vec s = c[0];
    for (int j = 1; j < CHAINS; ++j) s = vadd(s, c[j]);
    total += vsum(s);
    rate += flops * kLanes * CHAINS * double(iters) / (cpu_now() - t0) / 1e9;
  }
  g_sink = total;
  return rate;
}

// The best GFLOP/s of `trials` runs of trial(iters, threads), each of about `seconds`: the
// iterations come from a short probe of `probe` of them; `flops`: per iteration and thread.
template <class Trial>
static double best_rate(Trial trial, long long probe, double flops, int threads, double seconds, int trials) {
  const double per_thread = trial(probe, threads) / threads;
  const long long iters = (long long)(per_thread * 1e9 * seconds / flops) + 1;
  double best = 0;
  for (int r = 0; r < trials; ++r) best = std::max(best, trial(iters, threads));
  return best;
}

template <class Step>
static double chains_gflops(int threads, double seconds, int trials, double flops, float a, float b, Step step) {
  auto trial = [&](long long iters, int n) { return chains_trial(iters, n, flops, a, b, step); };
  return best_rate(trial, 1 << 16, flops * kLanes * CHAINS, threads, seconds, trials);
}

extern "C" double prism_measure_fma_gflops(int threads, double seconds, int trials) {
  return chains_gflops(threads, seconds, trials, 2, 0.999999f, 1e-7f, [](vec c, vec a, vec b) { return vfma(c, a, b); });
}

// FMAs fed by 16-bit B vectors widened as they load, as the code generator's micro-kernel does
// where a CPU has no 16-bit matmul instruction: an MR x NV register block of accumulators, NV
// vectors of B widened per k (f16 by vcvtph2ps, bf16 by vpmovzxwd and a shift) for MR * NV FMAs,
// B (64 rows) and A in L1. The widening competes with the FMAs for the vector ports, so this is
// the peak of the instructions a 16-bit matmul runs on there: the best over the blocks the
// register file allows (Zen 3, f16: 4 x 3 ... 8 x 1).
#if defined(__AVX512F__)
static inline vec widen(const uint16_t* p, bool f16) {
  const __m256i h = _mm256_loadu_si256((const __m256i*)p);
  return f16 ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
#elif defined(__AVX2__) && defined(__F16C__)
static inline vec widen(const uint16_t* p, bool f16) {
  const __m128i h = _mm_loadu_si128((const __m128i*)p);
  return f16 ? _mm256_cvtph_ps(h) : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
#endif
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__F16C__))
template <int MR, int NV, bool F16>
static double widen_trial(long long iters, int threads) {
  constexpr int kRows = 64;
  double rate = 0;
  float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total, rate)
  {
    alignas(64) uint16_t b[kRows * NV * kLanes];
    alignas(64) float a[MR * kRows];
    for (int i = 0; i < kRows * NV * kLanes; ++i) b[i] = F16 ? 0x3c00 : 0x3f80;  // 1.0
    for (int i = 0; i < MR * kRows; ++i) a[i] = 1e-7f;
    vec c[MR][NV];
    for (int r = 0; r < MR; ++r)
      for (int v = 0; v < NV; ++v) c[r][v] = vset(float(r + v));
#pragma omp barrier
    double t0 = cpu_now();
    for (long long i = 0; i < iters; ++i) {
      __asm__ volatile("" ::: "memory");  // B is loaded and widened again every pass
      for (int k = 0; k < kRows; ++k) {
        vec w[NV];
        for (int v = 0; v < NV; ++v) w[v] = widen(b + (k * NV + v) * kLanes, F16);
        for (int r = 0; r < MR; ++r) {
          const vec x = vset(a[r * kRows + k]);
          for (int v = 0; v < NV; ++v) c[r][v] = vfma(x, w[v], c[r][v]);
        }
      }
    }
    double seconds = cpu_now() - t0;
    vec s = vset(0);
    for (int r = 0; r < MR; ++r)
      for (int v = 0; v < NV; ++v) s = vadd(s, c[r][v]);
    total += vsum(s);
    rate += 2.0 * kLanes * MR * NV * kRows * double(iters) / seconds / 1e9;
  }
  g_sink = total;
  return rate;
}

template <int MR, int NV, bool F16>
static double widen_gflops(int threads, double seconds, int trials) {
  return best_rate(widen_trial<MR, NV, F16>, 64, 2.0 * kLanes * MR * NV * 64, threads, seconds, trials);
}

template <bool F16>
static double widen_best(int threads, double seconds, int trials) {
#if defined(__AVX512F__)  // 32 registers
  return std::max({widen_gflops<8, 3, F16>(threads, seconds, trials), widen_gflops<12, 2, F16>(threads, seconds, trials),
                   widen_gflops<6, 4, F16>(threads, seconds, trials)});
#else  // 16 registers
  return std::max({widen_gflops<4, 3, F16>(threads, seconds, trials), widen_gflops<6, 2, F16>(threads, seconds, trials),
                   widen_gflops<8, 1, F16>(threads, seconds, trials)});
#endif
}
#endif

// f16 != 0: f16 B, else bf16. 0 where the compiler's target has neither AVX-512F nor AVX2 with F16C.
extern "C" double prism_measure_widen_gflops(int f16, int threads, double seconds, int trials) {
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__F16C__))
  return f16 ? widen_best<true>(threads, seconds, trials) : widen_best<false>(threads, seconds, trials);
#else
  (void)f16, (void)threads, (void)seconds, (void)trials;
  return 0;
#endif
}

// vdpbf16ps: per f32 lane, two bf16 products added to the lane (4 flops). Its rate differs from
// the FMA's by CPU (Zen 4: twice the f32 FMA's flops; Sapphire Rapids: half), so it is measured.
// The operands are bf16 pairs of normal numbers (an f32 whose low half is a bf16 too). 0: no
// instruction.
extern "C" double prism_measure_bf16_dot_gflops(int threads, double seconds, int trials) {
#if defined(__AVX512BF16__)
  const float pair = 0.99609375f;  // 0x3F7F0000: its low 16 bits (0) are bf16 zero, a normal value
  return chains_gflops(threads, seconds, trials, 4, pair, pair, [](vec c, vec a, vec b) {
    return _mm512_dpbf16_ps(c, (__m512bh)a, (__m512bh)b);
  });
#else
  (void)threads, (void)seconds, (void)trials;
  return 0;
#endif
}

// tdpbf16ps: C (16 x 16 f32) += A (16 x 32 bf16) B (32 x 16 bf16) a tile instruction, four
// independent accumulators per thread (the unit's latency), after Linux grants the tile state
// (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA). 0: no AMX-BF16, or refused.
#if defined(__AMX_BF16__) && defined(__AMX_TILE__)
#include <sys/syscall.h>
#include <unistd.h>
struct amx_config {
  unsigned char palette, start_row, reserved[14];
  unsigned short colsb[16];
  unsigned char rows[16];
};
static double amx_trial(long long iters, int threads) {
  double rate = 0;
#pragma omp parallel num_threads(threads) reduction(+ : rate)
  {
    amx_config c{};
    c.palette = 1;
    for (int t = 0; t < 6; ++t) c.colsb[t] = 64, c.rows[t] = 16;
    __asm__ volatile("ldtilecfg %0" ::"m"(c));
    alignas(64) static const unsigned short ones[16 * 32] = {};
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm4" ::"r"(ones), "r"(64L) : "memory");
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm5" ::"r"(ones), "r"(64L) : "memory");
    __asm__ volatile("tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3" ::);
#pragma omp barrier
    double t0 = cpu_now();
    for (long long i = 0; i < iters; ++i)
      __asm__ volatile("tdpbf16ps %%tmm5, %%tmm4, %%tmm0\n\ttdpbf16ps %%tmm5, %%tmm4, %%tmm1\n\t"
                       "tdpbf16ps %%tmm5, %%tmm4, %%tmm2\n\ttdpbf16ps %%tmm5, %%tmm4, %%tmm3" ::);
    rate += 4.0 * 2 * 16 * 16 * 32 * double(iters) / (cpu_now() - t0) / 1e9;
    __asm__ volatile("tilerelease" ::);
  }
  return rate;
}
#endif

extern "C" double prism_measure_amx_gflops(int threads, double seconds, int trials) {
#if defined(__AMX_BF16__) && defined(__AMX_TILE__)
  if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) return 0;
  return best_rate(amx_trial, 1 << 12, 4.0 * 2 * 16 * 16 * 32, threads, seconds, trials);
#else
  (void)threads, (void)seconds, (void)trials;
  return 0;
#endif
}
