// libprism_cuda_plan.so (plan_library.h): a loaded plan is its parsed steps, the device with its
// module, and a cuBLAS handle; a run binds the caller's pointers to the plan's tensors and calls
// run_steps, the runner's own code, on the caller's stream.
#include "cuda_plan/plan_library.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/backend/cuda/plan_run.h"

namespace {

using namespace prism::backend::cuda;

struct LoadedPlan {
  CudaPlan plan;
  std::unique_ptr<CudaDevice> device;
  std::unique_ptr<Cublas> cublas;
  std::mutex running;  // CudaDevice is not thread-safe
};

thread_local std::string last_error;

int failed(const std::exception& e) {
  last_error = e.what();
  return 1;
}

}  // namespace

extern "C" void* prism_plan_load(const char* plan_text) {
  last_error.clear();
  try {
    auto loaded = std::make_unique<LoadedPlan>();
    loaded->plan = parse_plan(plan_text ? plan_text : "");
    loaded->device = std::make_unique<CudaDevice>();
    loaded->device->load_ptx(loaded->plan.ptx);
    if (loaded->plan.uses_cublas()) loaded->cublas = std::make_unique<Cublas>();
    return loaded.release();
  } catch (const std::exception& e) {
    failed(e);
    return nullptr;
  }
}

extern "C" int prism_plan_run(void* handle, const void* const* inputs, void* const* outputs, void* stream) {
  last_error.clear();
  auto& loaded = *static_cast<LoadedPlan*>(handle);
  std::lock_guard lock(loaded.running);
  const CudaPlan& plan = loaded.plan;
  std::vector<CudaDevice::Ptr> scratch;
  try {
    loaded.device->set_current();
    DeviceTensors tensors;
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      tensors[plan.inputs[i].name] = {reinterpret_cast<CudaDevice::Ptr>(inputs[i]), plan.inputs[i].dtype};
    for (size_t o = 0; o < plan.outputs.size(); ++o)
      tensors[plan.outputs[o].name] = {reinterpret_cast<CudaDevice::Ptr>(outputs[o]), plan.outputs[o].dtype};
    for (const CudaTensor& t : plan.scratch) {
      const size_t bytes = size_t(t.elements) * size_t(prism::dtype_bytes(t.dtype));
      scratch.push_back(loaded.device->allocate_async(bytes, stream));
      if (t.zeroed) loaded.device->zero_async(scratch.back(), bytes, stream);
      tensors[t.name] = {scratch.back(), t.dtype};
    }
    run_steps(plan, *loaded.device, loaded.cublas.get(), tensors, stream);
    for (CudaDevice::Ptr p : scratch) loaded.device->release_async(p, stream);
    return 0;
  } catch (const std::exception& e) {
    for (CudaDevice::Ptr p : scratch) try {
        loaded.device->release_async(p, stream);
      } catch (const std::exception&) {
      }
    return failed(e);
  }
}

extern "C" int prism_plan_inputs(const void* handle) { return int(static_cast<const LoadedPlan*>(handle)->plan.inputs.size()); }

extern "C" int prism_plan_outputs(const void* handle) { return int(static_cast<const LoadedPlan*>(handle)->plan.outputs.size()); }

extern "C" void prism_plan_free(void* handle) { delete static_cast<LoadedPlan*>(handle); }

extern "C" const char* prism_plan_error(void) { return last_error.c_str(); }
