// Measuring a GPU's streaming-read bandwidth: one kernel that reads a large buffer in 16-byte
// vectors over every SM, timed with events (the best of a few runs). For the GPU target
// description (cuda/describe.h), so that the roofline and the cost model use this device's
// bandwidth, not a data sheet's.
#pragma once
#include <cstdint>
#include <string>

#include "engine/backend/cuda/driver.h"

namespace prism::backend::cuda {

// The kernel's source: reads `bytes` (a multiple of 16) from its first parameter; the second
// receives a value only when the reads' XOR hits a constant, so no read can be optimized away.
std::string read_bandwidth_source(int64_t bytes);

// GB/s reading `bytes` (default 1 GiB) on `device`, best of `runs` timed launches after a warm-up.
// Throws Error{Failed} from NVRTC or the driver.
double measure_read_bandwidth_gbs(CudaDevice& device, int64_t bytes = int64_t(1) << 30, int runs = 5);

}  // namespace prism::backend::cuda
