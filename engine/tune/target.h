// Target descriptions: what the cost model and the roofline know about a machine. The CPU is
// described from this machine (sysfs, cpuid, and two short measurements, cached on disk); a GPU is
// data from its data sheet.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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
  // Streaming-read bandwidth measured at working-set sizes from the caches' to memory's, as
  // (bytes, GB/s) ascending in bytes and never rising (CPU; empty when not measured). A set near
  // the last level's size does not stay in it: other data and the replacement policy evict part
  // of every pass (on a Zen 4 with 32 MiB of L3: 16 MiB at 158 GB/s, 32 MiB at 66, 48 MiB at 40).
  std::vector<std::pair<double, double>> read_curve;
  // The read bandwidth for a working set of `bytes` read again and again (a timing loop, a layer
  // run many times): read_curve interpolated (in time per byte), the caches' bandwidth below it,
  // memory's above it. Without a curve: the caches' bandwidth up to half the last level plus the
  // second levels, memory's from cache_capacity() on, a mix of the two in between.
  double bandwidth_for(double bytes) const;
  // The fraction of such a working set the caches serve, consistent with bandwidth_for: 1 when it
  // reads at the caches' bandwidth, 0 at memory's.
  double cache_hit_fraction(double bytes) const;
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
// memory per block as fast_memory_bytes, its compute capability as arch, its streaming-read
// bandwidth measured (backend/cuda/bandwidth.h; the data sheet's when that fails); peaks from the
// data sheet for the H100 (SXM or PCIe) and H200, else the H100 SXM's, marked "assumed" in the
// model. Throws Error{Failed} saying why when there is no device.
TargetDescription describe_cuda_device();

}  // namespace prism::tune
