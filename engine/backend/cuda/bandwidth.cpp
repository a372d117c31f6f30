#include "engine/backend/cuda/bandwidth.h"

#include <algorithm>

#include "engine/backend/cuda/nvrtc.h"

namespace prism::backend::cuda {

namespace {

constexpr const char* kKernel = "prism_read_bandwidth";
constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;

}  // namespace

std::string read_bandwidth_source(int64_t bytes) {
  // The vector count is a constant: launches pass pointer parameters only.
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") " + kKernel +
         "(const uint4* __restrict__ p, unsigned* __restrict__ sink) {\n"
         "  const long long n = " + std::to_string(bytes / 16) + "LL;\n"
         "  uint4 acc = make_uint4(0u, 0u, 0u, 0u);\n"
         "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n"
         "    const uint4 v = p[i];\n"
         "    acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;\n"
         "  }\n"
         "  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x9e3779b9u) sink[0] = acc.x;\n"
         "}\n";
}

double measure_read_bandwidth_gbs(CudaDevice& device, int64_t bytes, int runs) {
  bytes = std::max<int64_t>(16, bytes / 16 * 16);
  device.load_ptx(compile_to_ptx(read_bandwidth_source(bytes), device.info().arch()).ptx);
  const CudaDevice::Ptr data = device.allocate(size_t(bytes)), sink = device.allocate(16);
  double best_ms = 0;
  try {
    const int64_t blocks = int64_t(std::max(1, device.info().sm_count)) * kBlocksPerSm;
    auto read = [&] { device.launch(kKernel, blocks, kThreads, 0, {data, sink}); };
    read();  // warm-up: module load, clocks
    device.synchronize();
    for (int r = 0; r < std::max(1, runs); ++r) {
      const double ms = device.time_ms(read, 1);
      if (best_ms == 0 || ms < best_ms) best_ms = ms;
    }
  } catch (...) {
    device.release(data);
    device.release(sink);
    throw;
  }
  device.release(data);
  device.release(sink);
  return best_ms > 0 ? double(bytes) / (best_ms * 1e6) : 0;
}

}  // namespace prism::backend::cuda
