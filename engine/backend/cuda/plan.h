// What prism-runner runs on the GPU for one candidate or for the eager baseline: a PTX module, the
// device tensors (inputs in parameter order, outputs in return order, scratch) with their element
// counts and storage dtypes, and the launch sequence: kernels of the module (codegen.h's
// CudaKernelInfo) and matmuls through cuBLAS. A plain data structure with a line-based text
// form, handed to the worker in a file:
//
//   tensor input|output|scratch|zeroed NAME ELEMENTS DTYPE     (zeroed: scratch set to 0 once allocated)
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
  bool zeroed = false;  // scratch whose bytes are zero before the plan's first launch (ticket counters, ticket.h)
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

// The cuBLAS calls of row-major C[i] = A[i] @ B[i] for every index i of `batch`: `matrix` holds
// the tensors, sizes and transposes; each operand is at element `offset` + the sum of its batch
// strides (one per batch dim, 0 where it broadcasts) times i. One strided-batched call when each
// operand's batch is whole (in order, a matrix apart) or one matrix for all, else one call per
// batch element.
struct GemmOperand {
  int64_t offset = 0;
  std::vector<int64_t> batch_strides;
};
std::vector<CudaGemm> batched_gemms(const CudaGemm& matrix, const std::vector<int64_t>& batch, const GemmOperand& a, const GemmOperand& b,
                                    const GemmOperand& c);

// cuBLAS's column-major view of a row-major CudaGemm: C^T (n x m) = B^T A^T, so B is the first
// operand and A the second; an operand stored transposed (row-major [n, k] for B, [k, m] for A)
// is, column-major, the operand itself, transposed back with its stored leading dim. What
// Cublas::gemm calls, and what a CUDA export's launcher (export.h) writes out.
struct ColumnMajorGemm {
  bool transpose_first = false, transpose_second = false;  // CUBLAS_OP_T where true, else CUBLAS_OP_N
  int64_t m = 0, n = 0, k = 0;                             // cuBLAS's: the row-major gemm's n, m and k
  int64_t ld_first = 0, ld_second = 0, ld_c = 0;
};
ColumnMajorGemm column_major(const CudaGemm& g);

std::string plan_text(const CudaPlan& plan);
// Throws Error{InvalidArgument} naming the first malformed line.
CudaPlan parse_plan(const std::string& text);

// The plan of a generated candidate (codegen.h) from the instance, its lowering and its source:
// its inputs the instance's input tensors (in the program's parameter order, as a family declares
// them), its outputs the graph's, scratch sized from the instance and the source's ticket counters
// (zeroed; 32-bit words, declared f32 for their size), a step per launch. A library matmul runs as cuBLAS
// calls (a vendor kernel, as OpenBLAS on the CPU) when its operands' layouts and dtypes allow
// (dense rows or columns, one dtype for A and B, C in it or f32), else as its generated kernel.
CudaPlan candidate_plan(const sgraph::Instance& instance, const kir::Program& lowered, const CudaSource& source);

}  // namespace prism::backend::cuda
