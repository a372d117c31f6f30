#include "engine/backend/cuda/driver.h"

#include <dlfcn.h>

#include <algorithm>

#include "engine/error.h"

namespace prism::backend::cuda {

namespace {

// The driver API, declared here so that prism needs no toolkit headers to build.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void*;  // CUcontext, CUmodule, CUfunction, CUevent, CUstream

constexpr int kAttrSharedPerBlock = 8;        // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
constexpr int kAttrSmCount = 16;              // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrCcMajor = 75;              // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrCcMinor = 76;              // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr int kAttrSharedPerBlockOptin = 97;  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
constexpr int kAttrL2Bytes = 38;              // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
constexpr int kFuncMaxDynamicShared = 8;      // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

struct Driver {
  bool ok = false;
  std::string why;  // when !ok
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*device_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*device_name)(char*, int, CUdevice) = nullptr;
  CUresult (*primary_retain)(Handle*, CUdevice) = nullptr;
  CUresult (*primary_release)(CUdevice) = nullptr;
  CUresult (*ctx_set_current)(Handle) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
  CUresult (*module_load_data)(Handle*, const void*) = nullptr;
  CUresult (*module_unload)(Handle) = nullptr;
  CUresult (*module_function)(Handle*, Handle, const char*) = nullptr;
  CUresult (*func_set_attribute)(Handle, int, int) = nullptr;
  CUresult (*launch)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Handle, void**, void**) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*mem_alloc_async)(CUdeviceptr*, size_t, Handle) = nullptr;  // CUDA 11.2 on; optional
  CUresult (*driver_version)(int*) = nullptr;                            // optional
  CUresult (*mem_free_async)(CUdeviceptr, Handle) = nullptr;
  CUresult (*htod)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*dtoh)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*memset32)(CUdeviceptr, unsigned, size_t, Handle) = nullptr;
  CUresult (*event_create)(Handle*, unsigned) = nullptr;
  CUresult (*event_destroy)(Handle) = nullptr;
  CUresult (*event_record)(Handle, Handle) = nullptr;
  CUresult (*event_synchronize)(Handle) = nullptr;
  CUresult (*event_elapsed)(float*, Handle, Handle) = nullptr;
  CUresult (*error_string)(CUresult, const char**) = nullptr;

  std::string error(CUresult r) const {
    const char* s = nullptr;
    if (error_string && error_string(r, &s) == 0 && s) return s;
    return "CUDA error " + std::to_string(r);
  }
};

// The first of `names` the library defines (versioned entry points first).
template <class Fn>
void bind(void* handle, std::initializer_list<const char*> names, Fn& fn, std::string& missing) {
  for (const char* name : names)
    if (void* p = ::dlsym(handle, name)) {
      fn = reinterpret_cast<Fn>(p);
      return;
    }
  if (missing.empty()) missing = *names.begin();
}

Driver open_driver() {
  Driver d;
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    d.why = "no CUDA driver (libcuda.so.1 not found)";
    return d;
  }
  std::string missing;
  bind(h, {"cuInit"}, d.init, missing);
  bind(h, {"cuDeviceGetCount"}, d.device_count, missing);
  bind(h, {"cuDeviceGet"}, d.device_get, missing);
  bind(h, {"cuDeviceGetAttribute"}, d.device_attribute, missing);
  bind(h, {"cuDeviceGetName"}, d.device_name, missing);
  bind(h, {"cuDevicePrimaryCtxRetain"}, d.primary_retain, missing);
  bind(h, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, d.primary_release, missing);
  bind(h, {"cuCtxSetCurrent"}, d.ctx_set_current, missing);
  bind(h, {"cuCtxSynchronize"}, d.ctx_synchronize, missing);
  bind(h, {"cuModuleLoadData"}, d.module_load_data, missing);
  bind(h, {"cuModuleUnload"}, d.module_unload, missing);
  bind(h, {"cuModuleGetFunction"}, d.module_function, missing);
  bind(h, {"cuFuncSetAttribute"}, d.func_set_attribute, missing);
  bind(h, {"cuLaunchKernel"}, d.launch, missing);
  bind(h, {"cuMemAlloc_v2"}, d.mem_alloc, missing);
  bind(h, {"cuMemFree_v2"}, d.mem_free, missing);
  bind(h, {"cuMemcpyHtoD_v2"}, d.htod, missing);
  bind(h, {"cuMemcpyDtoH_v2"}, d.dtoh, missing);
  bind(h, {"cuMemsetD32Async"}, d.memset32, missing);
  bind(h, {"cuEventCreate"}, d.event_create, missing);
  bind(h, {"cuEventDestroy_v2", "cuEventDestroy"}, d.event_destroy, missing);
  bind(h, {"cuEventRecord"}, d.event_record, missing);
  bind(h, {"cuEventSynchronize"}, d.event_synchronize, missing);
  bind(h, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, d.event_elapsed, missing);
  bind(h, {"cuGetErrorString"}, d.error_string, missing);
  std::string optional;  // stream-ordered allocation: allocate_async falls back without it
  bind(h, {"cuMemAllocAsync"}, d.mem_alloc_async, optional);
  bind(h, {"cuMemFreeAsync"}, d.mem_free_async, optional);
  bind(h, {"cuDriverGetVersion"}, d.driver_version, optional);
  if (!missing.empty()) {
    d.why = "CUDA driver unusable: libcuda.so.1 has no " + missing;
    return d;
  }
  if (CUresult r = d.init(0); r != 0) {
    d.why = r == 100 ? "no CUDA device" : "CUDA driver failed to initialize: " + d.error(r);  // 100: CUDA_ERROR_NO_DEVICE
    return d;
  }
  int count = 0;
  if (CUresult r = d.device_count(&count); r != 0 || count == 0) {
    d.why = r != 0 ? "CUDA driver cannot count devices: " + d.error(r) : "no CUDA device";
    return d;
  }
  d.ok = true;
  return d;
}

const Driver& driver() {
  static const Driver d = open_driver();
  return d;
}

const Driver& usable_driver() {
  const Driver& d = driver();
  if (!d.ok) throw Error(Error::Kind::Failed, "CUDA is not available: " + d.why);
  return d;
}

void check(CUresult r, const std::string& what) {
  if (r != 0) throw Error(Error::Kind::Failed, what + ": " + driver().error(r));
}

std::string kib(int64_t bytes) { return std::to_string(bytes / 1024) + " KiB"; }

DeviceInfo query(const Driver& d, CUdevice dev) {
  DeviceInfo info;
  char name[256] = {};
  check(d.device_name(name, int(sizeof name) - 1, dev), "cuDeviceGetName");
  info.name = name;
  int v = 0;
  check(d.device_attribute(&info.cc_major, kAttrCcMajor, dev), "cuDeviceGetAttribute");
  check(d.device_attribute(&info.cc_minor, kAttrCcMinor, dev), "cuDeviceGetAttribute");
  check(d.device_attribute(&info.sm_count, kAttrSmCount, dev), "cuDeviceGetAttribute");
  check(d.device_attribute(&v, kAttrSharedPerBlock, dev), "cuDeviceGetAttribute");
  info.shared_per_block = v;
  check(d.device_attribute(&v, kAttrSharedPerBlockOptin, dev), "cuDeviceGetAttribute");
  info.shared_per_block_optin = v;
  check(d.device_attribute(&v, kAttrL2Bytes, dev), "cuDeviceGetAttribute");
  info.l2_bytes = v;
  if (d.driver_version && d.driver_version(&v) == 0) info.driver_version = v;
  return info;
}

}  // namespace

CudaStatus cuda_status() {
  const Driver& d = driver();
  if (!d.ok) return {false, d.why};
  try {
    CUdevice dev = 0;
    check(d.device_get(&dev, 0), "cuDeviceGet");
    DeviceInfo i = query(d, dev);
    return {true, i.name + ": compute capability " + std::to_string(i.cc_major) + "." + std::to_string(i.cc_minor) + ", " +
                      std::to_string(i.sm_count) + " SMs, " + kib(i.shared_per_block) + " shared memory per block (" +
                      kib(i.shared_per_block_optin) + " opt-in)"};
  } catch (const Error& e) {
    return {false, e.what()};
  }
}

CudaDevice::CudaDevice(int ordinal) {
  const Driver& d = usable_driver();
  check(d.device_get(&device_, ordinal), "cuDeviceGet(" + std::to_string(ordinal) + ")");
  info_ = query(d, device_);
  check(d.primary_retain(&context_, device_), "cuDevicePrimaryCtxRetain");
  set_current();
}

CudaDevice::~CudaDevice() {
  const Driver& d = driver();
  if (!context_) return;
  d.ctx_set_current(context_);
  if (flush_buffer_) d.mem_free(flush_buffer_);
  for (void* m : modules_) d.module_unload(m);
  d.primary_release(device_);
}

void CudaDevice::set_current() { check(driver().ctx_set_current(context_), "cuCtxSetCurrent"); }

CudaDevice::Ptr CudaDevice::allocate(size_t bytes) {
  set_current();
  CUdeviceptr p = 0;
  check(driver().mem_alloc(&p, bytes ? bytes : 1), "cuMemAlloc of " + std::to_string(bytes) + " bytes");
  return p;
}

void CudaDevice::release(Ptr p) {
  if (p) check(driver().mem_free(p), "cuMemFree");
}

CudaDevice::Ptr CudaDevice::allocate_async(size_t bytes, void* stream) {
  if (!driver().mem_alloc_async) return allocate(bytes);
  set_current();
  CUdeviceptr p = 0;
  check(driver().mem_alloc_async(&p, bytes ? bytes : 1, stream), "cuMemAllocAsync of " + std::to_string(bytes) + " bytes");
  return p;
}

void CudaDevice::zero_async(Ptr p, size_t bytes, void* stream) {
  set_current();
  check(driver().memset32(p, 0, bytes / 4, stream), "cuMemsetD32Async of " + std::to_string(bytes) + " bytes");
}

void CudaDevice::release_async(Ptr p, void* stream) {
  if (!p) return;
  if (!driver().mem_free_async) {  // cuMemFree waits for the device
    release(p);
    return;
  }
  check(driver().mem_free_async(p, stream), "cuMemFreeAsync");
}

void CudaDevice::to_device(Ptr dst, const void* src, size_t bytes) { check(driver().htod(dst, src, bytes), "cuMemcpyHtoD"); }

void CudaDevice::to_host(void* dst, Ptr src, size_t bytes) { check(driver().dtoh(dst, src, bytes), "cuMemcpyDtoH"); }

void CudaDevice::load_ptx(const std::string& ptx) {
  set_current();
  Handle m = nullptr;
  check(driver().module_load_data(&m, ptx.c_str()), "cuModuleLoadData");
  modules_.push_back(m);
}

void* CudaDevice::function(const std::string& name) {
  if (auto it = functions_.find(name); it != functions_.end()) return it->second;
  for (void* m : modules_) {
    Handle f = nullptr;
    if (driver().module_function(&f, m, name.c_str()) == 0) return functions_[name] = f;
  }
  throw Error(Error::Kind::Failed, "no kernel '" + name + "' in the loaded modules");
}

void CudaDevice::launch(const std::string& name, int64_t grid_blocks, int threads, int64_t shared_bytes, const std::vector<Ptr>& params,
                        void* stream) {
  const Driver& d = driver();
  Handle f = function(name);
  if (shared_bytes > info_.shared_per_block && raised_[name] < shared_bytes) {
    check(d.func_set_attribute(f, kFuncMaxDynamicShared, int(shared_bytes)), "cuFuncSetAttribute(" + name + ", " + kib(shared_bytes) + ")");
    raised_[name] = shared_bytes;
  }
  std::vector<CUdeviceptr> values(params.begin(), params.end());
  std::vector<void*> args;
  for (CUdeviceptr& v : values) args.push_back(&v);
  check(d.launch(f, unsigned(grid_blocks), 1, 1, unsigned(threads), 1, 1, unsigned(shared_bytes), stream, args.data(), nullptr),
        "cuLaunchKernel(" + name + ")");
}

void CudaDevice::flush_l2() {
  if (!flush_buffer_) {
    flush_bytes_ = std::max<size_t>(size_t(2 * info_.l2_bytes), size_t(64) << 20);
    flush_buffer_ = allocate(flush_bytes_);
  }
  check(driver().memset32(flush_buffer_, 0, flush_bytes_ / 4, nullptr), "cuMemsetD32Async (the L2 flush)");
}

void CudaDevice::synchronize() { check(driver().ctx_synchronize(), "cuCtxSynchronize"); }

double CudaDevice::time_ms(const std::function<void()>& work, int reps) {
  const Driver& d = driver();
  Handle start = nullptr, stop = nullptr;
  check(d.event_create(&start, 0), "cuEventCreate");
  check(d.event_create(&stop, 0), "cuEventCreate");
  float ms = 0;
  try {
    check(d.event_record(start, nullptr), "cuEventRecord");
    for (int r = 0; r < reps; ++r) work();
    check(d.event_record(stop, nullptr), "cuEventRecord");
    check(d.event_synchronize(stop), "cuEventSynchronize");
    check(d.event_elapsed(&ms, start, stop), "cuEventElapsedTime");
  } catch (...) {
    d.event_destroy(start);
    d.event_destroy(stop);
    throw;
  }
  d.event_destroy(start);
  d.event_destroy(stop);
  return double(ms) / (reps > 0 ? reps : 1);
}

}  // namespace prism::backend::cuda
