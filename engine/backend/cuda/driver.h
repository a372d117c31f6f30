// The CUDA driver API, opened at run time (dlopen("libcuda.so.1")), so prism builds and runs on
// machines without a GPU: cuda_status() then says why in words and every CudaDevice operation
// throws Error{Failed} with that reason. With a device: load PTX (from nvrtc.h), allocate, copy,
// launch a named kernel with pointer parameters (codegen.h's CudaKernelInfo), time with events.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace prism::backend::cuda {

struct CudaStatus {
  bool available = false;
  // With a device: "NVIDIA H100 …: compute capability 9.0, 132 SMs, 48 KiB shared memory per
  // block (227 KiB opt-in)". Else why not: "no CUDA driver (libcuda.so.1 not found)", "no CUDA
  // device", or the driver's error.
  std::string detail;
};
CudaStatus cuda_status();

struct DeviceInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t shared_per_block = 0;        // default limit
  int64_t shared_per_block_optin = 0;  // with the function attribute raised
  int64_t l2_bytes = 0;
  int driver_version = 0;  // the CUDA version the driver supports, as 1000 * major + 10 * minor (0: unknown)
  std::string arch() const { return "compute_" + std::to_string(cc_major) + std::to_string(cc_minor); }  // for NVRTC
};

// One device with its primary context, current on the thread that uses it. Not thread-safe.
class CudaDevice {
 public:
  using Ptr = uint64_t;  // a device address (CUdeviceptr)

  // Throws Error{Failed} with cuda_status()'s reason when there is no usable device.
  explicit CudaDevice(int ordinal = 0);
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const DeviceInfo& info() const { return info_; }
  // Makes the device's primary context current on the calling thread (a caller's thread may hold
  // another, or none).
  void set_current();

  Ptr allocate(size_t bytes);
  void release(Ptr p);
  // In `stream`'s order (cuMemAllocAsync, cuMemFreeAsync), where the driver has them; else as
  // allocate and release.
  Ptr allocate_async(size_t bytes, void* stream);
  void release_async(Ptr p, void* stream);
  // Sets `bytes` (a multiple of 4) at p to zero, in `stream`'s order.
  void zero_async(Ptr p, size_t bytes, void* stream);
  void to_device(Ptr dst, const void* src, size_t bytes);
  void to_host(void* dst, Ptr src, size_t bytes);

  // Loads a module; its kernels are then launched by name.
  void load_ptx(const std::string& ptx);
  // Launches kernel `name` of a loaded module on `stream` (a CUstream; null: the default stream):
  // grid_blocks blocks (x) of `threads` threads, shared_bytes of dynamic shared memory (the limit
  // is raised when above the default), `params` its pointer parameters in order.
  void launch(const std::string& name, int64_t grid_blocks, int threads, int64_t shared_bytes, const std::vector<Ptr>& params,
              void* stream = nullptr);
  void synchronize();
  // Overwrites a buffer twice the L2's size on the default stream, so that the next launch reads
  // its inputs from device memory as a layer of a large model does (its weights never stay in L2
  // between calls). Timings of tiny kernels on a warm L2 would beat the HBM roofline.
  void flush_l2();
  // Milliseconds per run of `work` (launches) over `reps` runs, measured with events.
  double time_ms(const std::function<void()>& work, int reps = 10);

 private:
  void* function(const std::string& name);

  int device_ = 0;
  void* context_ = nullptr;
  DeviceInfo info_;
  std::vector<void*> modules_;
  std::map<std::string, void*> functions_;
  std::map<std::string, int64_t> raised_;
  Ptr flush_buffer_ = 0;
  size_t flush_bytes_ = 0;  // function -> dynamic shared memory limit set
};

}  // namespace prism::backend::cuda
