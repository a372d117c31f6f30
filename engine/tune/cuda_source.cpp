#include "engine/tune/cuda_source.h"

#include "engine/backend/cuda/codegen.h"

namespace prism::tune {

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& item : items) s += (s.empty() ? "" : ", ") + item;
  return s;
}

}  // namespace

KernelChoice cuda_kernel_for(const Program& lowered, const Candidate& family, const std::map<std::string, int64_t>& bindings,
                             const backend::TargetDescription& target, const std::map<std::string, int64_t>* sizes) {
  sgraph::Instance instance = choose_instance(lowered, *family.graph, family.id, bindings, target, sizes);
  backend::cuda::CudaCodegenOptions options;
  options.shared_memory_bytes = target.fast_memory_bytes;
  backend::cuda::CudaSource cuda = backend::cuda::generate_cuda_source(instance, options);
  std::string launches = "// Launches, in order (one thread block per grid point; dynamic shared memory in bytes):\n";
  for (const auto& k : cuda.kernels)
    launches += "//   " + k.name + "<<<" + std::to_string(k.grid_blocks) + ", " + std::to_string(k.threads) + ", " +
                std::to_string(k.shared_bytes) + ">>>(" + join(k.params) + ")\n";
  if (!cuda.scratch_tensors.empty()) launches += "// Intermediate tensors the caller allocates: " + join(cuda.scratch_tensors) + "\n";
  KernelChoice choice;
  choice.sizes = instance_sizes(instance);
  choice.source = launches + cuda.source;
  return choice;
}

}  // namespace prism::tune
