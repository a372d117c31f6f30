// Target descriptions: what the cost model and the roofline know about a machine. The CPU is
// described from this machine (sysfs, cpuid, and two short measurements, cached on disk); a GPU is
// data from its data sheet.
#pragma once
#include <cstdint>
#include <string>

#include "engine/sgraph/instantiate.h"

namespace prism::tune {

struct TargetDescription {
  std::string name = "cpu";     // "cpu" or "cuda"
  std::string model;            // e.g. "AMD EPYC, 2 cores, AVX-512"
  int cores = 1;
  int64_t l1_bytes = 0, l2_bytes = 0;  // per core
  int64_t l3_bytes = 0;                // total
  int simd_bytes = 32;          // 16 SSE, 32 AVX2, 64 AVX-512
  double bandwidth_gbs = 0;     // streaming-read bandwidth from memory, all cores (measured on the CPU)
  double cache_bandwidth_gbs = 0;  // the same for a working set that stays in the last-level cache
                                   // (0: unknown, use bandwidth_gbs)
  double peak_gflops = 0;       // f32 FMA peak, all cores (measured on the CPU)
  int64_t fast_memory_bytes = 0;  // per-block tile budget: sgraph::Target::fast_memory_bytes
  bool measured = false;        // bandwidth/peak measured here (false: data sheet values)
  double tensor_peak_gflops = 0;  // GPU: f16/bf16 dense peak on tensor cores, for the roofline at
                                  // 16-bit storage (0: none, peak_gflops serves)
  std::string arch;             // GPU: the virtual architecture NVRTC compiles for ("compute_90")
  sgraph::Target sgraph_target() const { return {name, fast_memory_bytes}; }
  // Bytes the caches can hold between two calls of a kernel: the last level plus every core's
  // second level (on CPUs whose last level is a victim cache, as AMD's, they add up).
  double cache_capacity() const { return double(l3_bytes) + double(l2_bytes) * double(cores); }
  // The fraction of a working set of `bytes`, read again and again (a timing loop, a layer run
  // many times), that the caches serve: all of it up to half the last level plus the second
  // levels, none from cache_capacity() on, linearly in between. A set near the last level's size
  // does not stay in it: other data and the replacement policy evict part of every pass (measured
  // on a Zen 4 with 32 MiB of L3 and 2 x 1 MiB of L2, two threads summing a buffer: 16 MiB at
  // 158 GB/s, 24 MiB at 94, 32 MiB at 66, 48 MiB at 40, memory's 40.9).
  double cache_hit_fraction(double bytes) const {
    const double all = double(l3_bytes) / 2 + double(l2_bytes) * double(cores), none = cache_capacity();
    return none <= 0 || bytes > none ? 0.0 : bytes <= all ? 1.0 : (none - bytes) / (none - all);
  }
  // The read bandwidth for such a working set: the hit fraction at the caches' bandwidth, the rest
  // at memory's (memory's for all of it when the caches' was not measured).
  double bandwidth_for(double bytes) const {
    const double h = cache_bandwidth_gbs > 0 ? cache_hit_fraction(bytes) : 0;
    if (h <= 0) return bandwidth_gbs;
    return 1.0 / (h / cache_bandwidth_gbs + (1 - h) / bandwidth_gbs);
  }
};

// This machine's CPU: cores from sched_getaffinity (else std::thread::hardware_concurrency), caches
// from /sys/devices/system/cpu/cpu0/cache, SIMD width from __builtin_cpu_supports, model from
// /proc/cpuinfo; bandwidth and peak measured once (cpu_measure.h, about a second) and cached in
// `cache_dir`/cpu-target.txt keyed by model, cores and PRISM_VERSION: a later call reads the file
// and measures nothing. Empty cache_dir: the parent of default_kernel_cache_dir() ($PRISM_CACHE_DIR,
// $XDG_CACHE_HOME/prism, ~/.cache/prism). Throws Error{Failed} when the measuring kernels fail.
TargetDescription describe_cpu(const std::string& cache_dir = "");

// An NVIDIA H100 SXM from its data sheet, for the CUDA backend.
TargetDescription cuda_h100_data();

// The GPU of this machine (device 0, driver.h's DeviceInfo): its SMs as cores, the opt-in shared
// memory per block as fast_memory_bytes, its compute capability as arch; bandwidth and peaks from
// the data sheet for the H100 (SXM or PCIe) and H200, else the H100 SXM's, marked "(assumed)" in
// the model. Throws Error{Failed} saying why when there is no device.
TargetDescription describe_cuda_device();

}  // namespace prism::tune
