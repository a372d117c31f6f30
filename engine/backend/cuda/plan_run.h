// Running a CUDA plan's steps (plan.h) on a device: what prism-runner checks and times
// (run_worker.cpp) and what the plan library runs on a caller's stream (cuda_plan/plan_library.cpp),
// one piece of code for both.
#pragma once
#include <map>
#include <string>

#include "engine/backend/cuda/cublas.h"
#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/plan.h"

namespace prism::backend::cuda {

struct DeviceTensor {
  CudaDevice::Ptr ptr = 0;
  DType dtype = DType::F32;
};
using DeviceTensors = std::map<std::string, DeviceTensor>;  // by the plan's tensor names

// Launches every step of `plan` in order on `stream` (null: the default stream): its kernels from
// `device`'s loaded modules, its matmuls through `cublas` (which plan.uses_cublas() needs), each
// tensor's address from `tensors`. Throws Error{InvalidArgument} for a tensor `tensors` lacks.
void run_steps(const CudaPlan& plan, CudaDevice& device, Cublas* cublas, const DeviceTensors& tensors, void* stream = nullptr);

}  // namespace prism::backend::cuda
