// cuBLAS, opened at run time (dlopen libcublas.so.13, .12, .so) like the driver, for the eager
// baseline's matmuls (plan.h's CudaGemm). Used by prism-runner and the plan library (plan_run.h).
#pragma once
#include <string>

#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/plan.h"

namespace prism::backend::cuda {

// library_types.h's cudaDataType of a stored dtype: CUDA_R_32F, CUDA_R_16F or CUDA_R_16BF.
int cuda_data_type(DType t);

// One cuBLAS handle on the current context (the device's primary context, which CudaDevice
// uses). Throws Error{Failed} in words when libcublas cannot be opened
// or a call fails.
class Cublas {
 public:
  Cublas();
  ~Cublas();
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

  // Row-major C = A @ B per batch element (f32 accumulation) on `stream` (null: the default
  // stream); a, b, c: the tensors' device addresses and dtypes.
  void gemm(const CudaGemm& g, CudaDevice::Ptr a, CudaDevice::Ptr b, CudaDevice::Ptr c, DType ab, DType c_dtype, void* stream = nullptr);

 private:
  void* handle_ = nullptr;
};

}  // namespace prism::backend::cuda
