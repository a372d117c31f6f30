#include "engine/tune/backends.h"

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cuda/cuda_backend.h"

namespace prism::tune {

const backend::Backend& backend_for(backend::Target target) {
  static const backend::cpu::CpuBackend cpu;
  static const backend::cuda::CudaBackend cuda;
  if (target == backend::Target::Cuda) return cuda;
  return cpu;
}

}  // namespace prism::tune
