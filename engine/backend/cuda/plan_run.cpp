#include "engine/backend/cuda/plan_run.h"

#include <vector>

#include "engine/error.h"

namespace prism::backend::cuda {

void run_steps(const CudaPlan& plan, CudaDevice& device, Cublas* cublas, const DeviceTensors& tensors, void* stream) {
  auto at = [&](const std::string& name) {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw Error(Error::Kind::InvalidArgument, "the plan names an undeclared tensor '" + name + "'");
    return it->second;
  };
  for (const CudaStep& step : plan.steps) {
    if (step.is_gemm) {
      if (!cublas) throw Error(Error::Kind::InvalidArgument, "the plan calls cuBLAS, and no cuBLAS handle was given");
      const DeviceTensor a = at(step.gemm.a), b = at(step.gemm.b), c = at(step.gemm.c);
      cublas->gemm(step.gemm, a.ptr, b.ptr, c.ptr, a.dtype, c.dtype, stream);
      continue;
    }
    std::vector<CudaDevice::Ptr> params;
    for (const auto& name : step.kernel.params) params.push_back(at(name).ptr);
    device.launch(step.kernel.name, step.kernel.grid_blocks, step.kernel.threads, step.kernel.shared_bytes, params, stream);
  }
}

}  // namespace prism::backend::cuda
