// This machine's CPU as a target: cores from sched_getaffinity (else
// std::thread::hardware_concurrency), caches from /sys/devices/system/cpu/cpu0/cache, SIMD width
// from __builtin_cpu_supports, model from /proc/cpuinfo; bandwidth and peak measured once
// (measure.h, several seconds) and cached on disk.
#pragma once
#include <string>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/measure.h"
#include "engine/backend/target.h"

namespace prism::backend::cpu {

// The description is cached in `cache_dir`/cpu-target.txt keyed by model, cores and PRISM_VERSION:
// a later call reads the file and measures nothing. Empty cache_dir: the parent of
// default_kernel_cache_dir() ($PRISM_CACHE_DIR, $XDG_CACHE_HOME/prism, ~/.cache/prism).
// $PRISM_CPU_DESCRIPTION's file path, where set, replaces `cache_dir`/cpu-target.txt (its directory
// checked and made as the cache's is). Throws Error{Failed} when the measuring kernels fail or the
// file's directory is not private.
TargetDescription describe_cpu(const std::string& cache_dir = "");

// Sets `t`'s bandwidths, read curve and peaks from a measurement (`cache_read_bytes`: the size
// its cache_bandwidth_gbs was read at). Every figure is what the machine reached (docs/tuning.md,
// "Peaks"): the f32 FMA peak is at least every rate FMAs reached while also widening 16-bit
// vectors, a larger set never reads faster than a smaller one, and memory's bandwidth is the
// better of the large stream and the curve's point past the caches.
void apply_measurement(TargetDescription& t, const CpuMeasurement& m, int64_t cache_read_bytes);

// The OpenBLAS kernel set for this CPU's instructions: "SkylakeX" with AVX-512 (F, BW, DQ, VL),
// "Haswell" with AVX2 and FMA, else null. Debian's OpenBLAS (DYNAMIC_ARCH) picks its kernels by
// the CPU's model and falls back to SSE3's ("Prescott") on one it does not know, as a VM's
// "Intel Xeon Processor", several times slower (docs/tuning.md, "The CPU's other kernel choices").
// The kernel runner sets OPENBLAS_CORETYPE to it unless the user set one.
const char* openblas_core_type();

}  // namespace prism::backend::cpu
