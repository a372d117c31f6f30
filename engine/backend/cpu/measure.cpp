#include "engine/backend/cpu/measure.h"

#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cpu/kernel_sources.h"

namespace prism::backend::cpu {

namespace {

// Every kernel times itself inside one OpenMP parallel region, each thread from a common barrier
// (thread start-up is not counted), and takes the best of several short trials. The figures are
// what the machine reaches (docs/tuning.md, "Peaks"), so another process on a shared machine
// must not lower them:
//
// Read: every thread sums its contiguous chunk of a float array with eight independent vector
// accumulators (enough to hide the add latency, so the loop waits on memory only), as many
// sweeps a trial as make it long enough to time; the array is first-touched by the threads that
// read it. Bandwidth is shared: GB/s = all bytes / the slowest thread's wall time, of the best
// trial (the least disturbed: another process stopping a thread only lengthens a trial).
//
// Compute (FMA, widened FMAs, vdpbf16ps, AMX): units are per core, so GFLOP/s = the sum of the
// threads' own rates, each timed by the thread's CPU time: the rate while it runs, which a thread
// the OS stops for another process does not lower. FMA: every thread runs CHAINS (10) independent
// chains acc = acc * a + b on vector registers of the widest ISA the compiler targets (explicit
// FMA intrinsics: ISO C++ mode does not contract a*b+c). Ten chains cover FMA latency (4 cycles)
// x 2 FMA pipes on current x86 cores, with registers to spare.
constexpr const char* kSource = embedded::measure_cpp;

}  // namespace

CpuMeasurement measure_cpu(const MeasureOptions& options) {
  CompileOptions compile;
  compile.cache_dir = options.kernel_cache_dir;
  compile.libs = {"-Wl,-z,nodelete"};  // libgomp's idle pool threads must outlive dlclose
  LoadedLibrary lib(compile_library(kSource, compile).path);
  auto read = lib.function<double (*)(long long, int, int)>("prism_measure_read_gbs");
  auto fma = lib.function<double (*)(int, double, int)>("prism_measure_fma_gflops");
  auto dot = lib.function<double (*)(int, double, int)>("prism_measure_bf16_dot_gflops");
  auto amx = lib.function<double (*)(int, double, int)>("prism_measure_amx_gflops");
  int threads = options.threads < 1 ? 1 : options.threads;
  CpuMeasurement m;
  m.bandwidth_gbs = read(static_cast<long long>(options.read_bytes), threads, options.read_repeats);
  if (options.cache_read_bytes > 0)
    m.cache_bandwidth_gbs = read(static_cast<long long>(options.cache_read_bytes), threads, options.cache_read_repeats);
  for (int64_t bytes : options.curve_bytes)
    m.read_curve.emplace_back(double(bytes), read(static_cast<long long>(bytes), threads, options.cache_read_repeats));
  m.peak_gflops = fma(threads, options.fma_seconds, options.fma_trials);
  m.bf16_dot_gflops = dot(threads, options.fma_seconds, options.fma_trials);
  m.bf16_amx_gflops = amx(threads, options.fma_seconds, options.fma_trials);
  auto widen = lib.function<double (*)(int, int, double, int)>("prism_measure_widen_gflops");
  m.widen_f16_gflops = widen(1, threads, options.fma_seconds, options.fma_trials);
  m.widen_bf16_gflops = widen(0, threads, options.fma_seconds, options.fma_trials);
  return m;
}

}  // namespace prism::backend::cpu
