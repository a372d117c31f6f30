// Lowering of a library kernel (one prism op over whole device tensors) to a simple CUDA kernel:
// a grid-stride loop over the result's elements (elementwise ops with numpy broadcasting, matmul
// with an output element per thread), or over the result elements of a reduction, each folded in
// order by one thread.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/backend/cuda/codegen.h"
#include "engine/ir/dtype.h"
#include "engine/sgraph/sgraph.h"

namespace prism::backend::cuda::detail {

// The instance's device tensors: concrete shape and storage type by name.
class DeviceTensors {
 public:
  void add(const std::string& name, std::vector<int64_t> shape, DType dtype) { tensors_.emplace(name, Entry{std::move(shape), dtype}); }
  const std::vector<int64_t>& shape(const std::string& name) const { return at(name).shape; }
  DType dtype(const std::string& name) const { return at(name).dtype; }

 private:
  struct Entry {
    std::vector<int64_t> shape;
    DType dtype;
  };
  const Entry& at(const std::string& name) const;
  std::map<std::string, Entry> tensors_;
};

// The `extern "C" __global__` kernel `fn` computing `kernel`; fills info (grid, threads, params:
// the kernel's inputs then its output). Throws Error{InvalidArgument} for an op it cannot lower.
std::string emit_library_kernel(const sgraph::LibraryKernel& kernel, const DeviceTensors& tensors, const std::string& fn, int threads,
                                CudaKernelInfo& info);

}  // namespace prism::backend::cuda::detail
