// A CUDA export (backend.h, Backend::export_source): the generated source with its kernels named
// after the export, then a host launcher that runs the plan (plan.h) on the caller's stream with
// the caller's device pointers: scratch tensors allocated and freed in stream order, each kernel
// launched with its grid, block and dynamic shared memory, each matmul through cuBLAS. Compiled
// with nvcc (link -lcublas where the plan has matmuls); docs/tuning.md, "Exports".
#pragma once
#include <string>

#include "engine/backend/cuda/plan.h"

namespace prism::backend::cuda {

// `source` (the generated CUDA C++) and `plan` (its launch plan, without PTX) as an export named
// `symbol`:
//   extern "C" int SYMBOL(const void* const* inputs, void* const* outputs, void* stream);
//   extern "C" const char* SYMBOL_error(void);
std::string export_source(const std::string& source, const CudaPlan& plan, const std::string& symbol);

// The header's declarations of that export (`guard`: its include guard).
std::string export_declarations(const std::string& guard, const std::string& symbol);

}  // namespace prism::backend::cuda
