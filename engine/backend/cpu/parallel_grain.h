// When a CPU loop is worth its threads (docs/tuning.md, "Threads and the grain"). Handing a few
// microseconds of work to a second thread gains little on a quiet machine and, where another
// process holds a core, costs a scheduler time slice (milliseconds) at the join: a loop below its
// grain runs on the calling thread alone, as PyTorch's parallel_for and OpenBLAS's GEMM do.
#pragma once
#include <cstdint>

#include "engine/backend/kernel_ir.h"

namespace prism::backend::cpu {

// The elements of one elementwise or row op over whole tensors (an eager op, a library kernel's
// loop): PyTorch's at::internal::GRAIN_SIZE.
constexpr int64_t kElementGrain = 32768;

// The element operations of one fused kernel's call (kernel_work): OpenBLAS's threshold for a
// threaded SGEMM (65536 x GEMM_MULTITHREAD_THRESHOLD 4 multiply-adds).
constexpr int64_t kKernelGrain = int64_t(1) << 18;

// Whether a loop is worth the threads: a fused kernel or a library matmul of `work` element
// operations per call, an elementwise or row loop (`elements`) over that many elements.
inline bool above_grain(double work, bool elements) { return work >= double(elements ? kElementGrain : kKernelGrain); }

// A custom kernel's element operations per call: each statement's elements (a matmul's output
// times its depth, an accumulation's input), the loop body's once per iteration, over the blocks.
int64_t kernel_work(const kir::CustomKernel& kernel);

}  // namespace prism::backend::cpu
