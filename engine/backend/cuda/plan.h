// What prism-runner runs on the GPU for one candidate or for the eager baseline: a PTX module, the
// device tensors (inputs in parameter order, outputs in return order, scratch) with their element
// counts and storage dtypes, and the launch sequence: kernels of the module (codegen.h's
// CudaKernelInfo) and matmuls through cuBLAS. A plain data structure with a line-based text
// form, handed to the worker in a file:
//
//   tensor input|output|scratch NAME ELEMENTS DTYPE
//   kernel NAME BLOCKS THREADS SHARED_BYTES N PARAM_1 … PARAM_N
//   gemm A B C M N K BATCH STRIDE_A STRIDE_B STRIDE_C OFFSET_A OFFSET_B OFFSET_C
//   ptx
//   <the PTX, to the end of the file>
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend/cuda/codegen.h"
#include "engine/ir/dtype.h"

namespace prism::backend::cuda {

struct CudaTensor {
  std::string name;
  int64_t elements = 0;
  DType dtype = DType::F32;
};

// Row-major C[i] = A[i] @ B[i] for i < batch, at element offsets offset + i * stride (a stride 0
// broadcasts). A and B share a dtype (f32, f16 or bf16); C is that dtype or f32; f32 accumulation.
struct CudaGemm {
  std::string a, b, c;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int64_t offset_a = 0, offset_b = 0, offset_c = 0;
  bool trans_a = false, trans_b = false;  // stored with the last two dims swapped (eager::Step)
};

struct CudaStep {
  bool is_gemm = false;
  CudaKernelInfo kernel;  // when !is_gemm
  CudaGemm gemm;          // when is_gemm
};

struct CudaPlan {
  std::string ptx;
  std::vector<CudaTensor> inputs, outputs, scratch;
  std::vector<CudaStep> steps;
  bool uses_cublas() const;
};

std::string plan_text(const CudaPlan& plan);
// Throws Error{InvalidArgument} naming the first malformed line.
CudaPlan parse_plan(const std::string& text);

// The plan of a generated candidate (codegen.h): its inputs the instance's input tensors (in the
// program's parameter order, as a family declares them), its outputs the graph's, scratch sized
// from the instance.
CudaPlan candidate_plan(const sgraph::Instance& instance, const CudaSource& source);

}  // namespace prism::backend::cuda
