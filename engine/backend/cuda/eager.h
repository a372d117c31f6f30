// The eager baseline on the GPU: the eager plan (backend/eager_plan.h) printed as a kernel per step
// over whole device tensors, each matmul a cuBLAS call (strided-batched GemmEx, f32 accumulation;
// the worker opens libcublas at run time), as PyTorch's eager mode runs a program.
#pragma once
#include <string>

#include "engine/backend/cuda/plan.h"
#include "engine/ir/program.h"

namespace prism::backend::cuda {

struct CudaEager {
  std::string source;  // CUDA C++ with every non-matmul kernel (compile with nvrtc.h)
  CudaPlan plan;       // tensors and steps; plan.ptx is left empty for the caller to fill
};

// For a lowered program (primitives only) at concrete bindings. Every value is stored at its
// declared dtype (f16 stays f16) and computed in f32 with the reference interpreter's formulas:
// elementwise ops with numpy broadcasting (a grid-stride thread per output element), sum / max /
// rms over one axis (a block per output element with a tree in dynamic shared memory when the axis is the
// innermost, else a thread per output element in axis order), transpose / concat / split as
// copies, reshape a view; scalar constants inlined. Inputs are named in0…, outputs out0….
// Throws Error{InvalidArgument} for a dim the bindings do not make a positive integer,
// Error{Failed} for an op it cannot run (not a primitive; a matmul of two different dtypes).
CudaEager generate_cuda_eager(const Program& lowered, const DimBindings& bindings);

}  // namespace prism::backend::cuda
