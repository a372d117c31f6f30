// This machine's CPU as a target: cores from sched_getaffinity (else
// std::thread::hardware_concurrency), caches from /sys/devices/system/cpu/cpu0/cache, SIMD width
// from __builtin_cpu_supports, model from /proc/cpuinfo; bandwidth and peak measured once
// (measure.h, about a second) and cached on disk.
#pragma once
#include <string>

#include "engine/backend/target.h"

namespace prism::backend::cpu {

// The description is cached in `cache_dir`/cpu-target.txt keyed by model, cores and PRISM_VERSION:
// a later call reads the file and measures nothing. Empty cache_dir: the parent of
// default_kernel_cache_dir() ($PRISM_CACHE_DIR, $XDG_CACHE_HOME/prism, ~/.cache/prism). Throws
// Error{Failed} when the measuring kernels fail.
TargetDescription describe_cpu(const std::string& cache_dir = "");

}  // namespace prism::backend::cpu
