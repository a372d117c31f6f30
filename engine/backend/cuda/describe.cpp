#include "engine/backend/cuda/describe.h"

#include <string>

#include "engine/backend/cuda/bandwidth.h"
#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/gpu_features.h"
#include "engine/backend/cuda/nvrtc.h"

namespace prism::backend::cuda {

TargetDescription cuda_h100_data() {
  TargetDescription t;
  t.target = kTarget;
  t.model = "NVIDIA H100 SXM (data sheet)";
  t.cores = 132;                     // SMs: one block per SM at a time, the unit of parallelism
  t.l1_bytes = 256 * 1024;           // L1 + shared memory per SM
  t.l2_bytes = 0;                    // no per-SM second level
  t.l3_bytes = 50 * 1024 * 1024;     // the last-level cache shared by all SMs (the H100's L2)
  t.bandwidth_gbs = 3350;            // HBM3
  t.peak_gflops = 67000;             // f32 FMA (non tensor core); 989 TFLOP/s fp16 dense on tensor cores
  t.fast_memory_bytes = 227 * 1024;  // shared memory usable by one block (228 KiB per SM)
  t.measured = false;
  gpu_features(t) = {"compute_90", 989000};  // f16/bf16 dense, tensor cores
  return t;
}

TargetDescription describe_cuda_device() {
  CudaDevice device;
  const DeviceInfo& info = device.info();
  TargetDescription t = cuda_h100_data();
  std::string peaks = "data-sheet peaks";
  if (info.name.find("H200") != std::string::npos) {
    t.bandwidth_gbs = 4800;  // HBM3e
  } else if (info.name.find("H100") != std::string::npos && info.name.find("PCIe") != std::string::npos) {
    t.bandwidth_gbs = 2000;
    t.peak_gflops = 51000;
    gpu_features(t).tensor_peak_gflops = 756000;
  } else if (info.name.find("H100") == std::string::npos) {
    peaks = "peaks assumed: an H100 SXM's";
  }
  t.cores = info.sm_count;
  t.toolchain = nvrtc_status().detail + ", driver for CUDA " + std::to_string(info.driver_version / 1000) + "." +
                std::to_string(info.driver_version % 1000 / 10);
  t.fast_memory_bytes = info.shared_per_block_optin > 0 ? info.shared_per_block_optin : info.shared_per_block;
  gpu_features(t).arch = info.arch();
  // The bandwidth measured on this device when NVRTC and the driver allow; else the data sheet's.
  std::string bandwidth = "data-sheet bandwidth";
  try {
    if (const double measured = measure_read_bandwidth_gbs(device); measured > 0) {
      t.bandwidth_gbs = measured;
      t.measured = true;
      bandwidth = "measured " + std::to_string(int64_t(measured + 0.5)) + " GB/s";
    }
  } catch (const std::exception&) {
    // the data sheet's bandwidth stays, and the model says so
  }
  t.model = info.name + ", " + std::to_string(info.sm_count) + " SMs, compute capability " + std::to_string(info.cc_major) + "." +
            std::to_string(info.cc_minor) + " (" + bandwidth + "; " + peaks + ")";
  return t;
}

}  // namespace prism::backend::cuda
