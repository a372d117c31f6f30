// Measuring this machine's streaming-read bandwidth and f32 FMA peak with small kernels compiled by
// engine/backend/cpu/compiler.h: the same compiler and -march=native as generated kernels, so the
// numbers are what generated code can reach on this machine, run in-process on all given threads.
// Peaks are the rates threads reach while they run (each timed by its CPU time), bandwidths the
// best of many short trials: what the machine reaches, not what another process left of it
// (docs/tuning.md, "Peaks").
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace prism::backend::cpu {

struct CpuMeasurement {
  double bandwidth_gbs = 0;  // streaming read, all threads, best of a few trials
  double cache_bandwidth_gbs = 0;  // the same over an array that stays in the last-level cache
  double peak_gflops = 0;    // independent FMA chains on vector registers, all threads
  double bf16_dot_gflops = 0;  // the same with vdpbf16ps (4 flops a lane); 0 without AVX-512 BF16
  double bf16_amx_gflops = 0;  // tdpbf16ps on four tiles, all threads; 0 without AMX-BF16 or the OS's leave
  double widen_f16_gflops = 0;   // FMAs on f16 B vectors widened as they load (best register block); 0: not measured
  double widen_bf16_gflops = 0;  // the same for bf16 B
  std::vector<std::pair<double, double>> read_curve;  // (bytes, GB/s) at MeasureOptions::curve_bytes
};

struct MeasureOptions {
  int threads = 1;
  int64_t read_bytes = int64_t(256) << 20;  // the array summed: far larger than any last-level cache
  int read_repeats = 12;                    // trials over it; the best counts (this VM varies 30-50 GB/s)
  int64_t cache_read_bytes = 0;             // an array that fits the last-level cache (0: not measured)
  int cache_read_repeats = 40;
  std::vector<int64_t> curve_bytes;         // more array sizes to read (cache_read_repeats trials each)
  double fma_seconds = 0.02;                // per FMA trial
  int fma_trials = 8;                       // the best counts
  std::string kernel_cache_dir;             // where the compiled kernels go (empty: the default)
};

// Throws Error{Failed} when the kernels do not compile or load.
CpuMeasurement measure_cpu(const MeasureOptions& options);

}  // namespace prism::backend::cpu
