// The CUDA code generator: it prints the kernel IR (engine/backend/kernel_ir.h, lowered with
// cuda_lowering()) as CUDA C++, compiled by nvrtc.h and launched through driver.h. It computes
// what sgraph::evaluate computes:
//
//   - a custom kernel becomes one `extern "C" __global__` kernel with one thread block per grid
//     point (blockIdx.x flattened over the grid, the last grid dim fastest). Every tile of the
//     block lives in dynamic shared memory: loads staged at their storage type (f32, __half,
//     __nv_bfloat16), computed tiles and accumulators in f32. The block runs its loop-invariant
//     statements once, the loop body F times, then the statements after the loop, with
//     __syncthreads() after each; each is shared by the block's threads (elementwise: thread t
//     takes elements t, t + T, …; matmul: an output element per thread, f32 accumulation in order;
//     reductions: a warp per result element with shuffles, or a thread per element for short axes);
//   - loads are staged with 16-byte vectors where every row allows it, the rows of a 16-bit tile
//     only matmuls read padded where 8 of them would share banks (pad_tiles.h); a matmul of two staged
//     16-bit tiles of one type runs on tensor cores (nvcuda::wmma, f32 accumulators, a warp per
//     16x16 / 8x32 / 32x8 output tile) where the sizes fit and every pointer is 32-byte aligned;
//   - a library kernel becomes a simple grid-stride kernel over its whole device tensors;
//   - device tensors are dense row-major at the dtype the sGraph declares; saves round to it.
//
// Kernel parameters: a pointer to every device tensor the kernel reads, then to every one it
// writes, in the order of sgraph::kernel_inputs / sgraph::kernel_outputs (CudaKernelInfo::params
// names them). Launch: grid_blocks blocks of `threads` threads with shared_bytes of dynamic shared
// memory (above 48 KiB the function's max dynamic shared size must be raised first). All sizes are
// compile-time constants of the source.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/kernel_ir.h"
#include "engine/sgraph/instantiate.h"

namespace prism::backend::cuda {

struct CudaCodegenOptions {
  int threads_per_block = 128;          // a multiple of 32, at most 1024
  int blocks_per_sm = 1;                // the blocks an SM must hold at once: ptxas keeps registers to their share
  int64_t shared_memory_bytes = 232448; // the most dynamic shared memory a block may use (H100: 227 KiB)
  bool tensor_cores = true;             // false: every matmul on the scalar path (no wmma)
  int pipeline_stages = 3;              // a loop's loads up to this many iterations deep (double_buffer.h; 1: they wait for its math)
  bool tails_in_launch = true;          // a kernel that ticket.h allows runs in the launch before it (false: its own)
  bool pad_rows = true;                 // pad_tiles.h: a staged tile only matmuls read gets rows free of bank conflicts
};

// Whether an m x n x k block matmul of 16-bit tiles has a tensor-core (WMMA) shape: m16n16k16,
// m8n32k16 or m32n8k16. (The generated code also needs its pointers 32-byte aligned.)
bool tensor_core_shape(int64_t m, int64_t n, int64_t k);
// Whether a block matmul of m x n x k against a staged 16-bit B takes the decode form (fewer than
// 16 rows; n and k multiples of 16): mma.sync fed by ldmatrix with B's columns as the
// instruction's 16 rows, its 8 columns up to 8 rows of A (staged at B's type, or computed and
// rounded as tensor_core_storage allows; emit_ops.h, emit_ldmatrix_mma). It is taken before WMMA.
bool decode_tensor_core_shape(int64_t m, int64_t n, int64_t k);

// The 16-bit type a block matmul of tiles stored as `a` and `b` (F32: computed in f32) runs at on
// tensor cores, else F32: both of one 16-bit type, or one 16-bit and the other computed in a
// program whose inputs and outputs are all stored at 16 bits (`all_16bit`) — the reference rounds
// every op's result to that dtype, so rounding that operand is the program's own rounding.
DType tensor_core_storage(DType a, DType b, bool all_16bit);

struct CudaKernelInfo {
  std::string name;           // the extern "C" symbol
  int64_t grid_blocks = 1;
  int threads = 128;
  int64_t shared_bytes = 0;   // dynamic shared memory per block
  std::vector<std::string> params;  // the device tensors its pointer parameters point to, in order
};

// The extern "C" name of the kernel printed for kernel k of the lowering (a tail's is its first
// kernel's).
std::string kernel_name(size_t k);

struct CudaSource {
  std::string source;
  std::vector<CudaKernelInfo> kernels;       // in launch order (the sGraph's kernel order)
  std::vector<size_t> launch_of;             // each kernel of the lowering: the one of `kernels` it runs in
  std::vector<std::string> scratch_tensors;  // intermediate device tensors the host must allocate, in order
  // Ticket counters (ticket.h): tensors of 32-bit words, zero before the first launch (the
  // kernels leave them zero), with their word counts.
  std::vector<std::pair<std::string, int64_t>> counters;
};

// The kernel IR as generate_cuda_source prints it: `lowered` with the rows of tiles only matmuls
// read padded where `options.pad_rows` (pad_tiles.h).
kir::Program printed_program(const kir::Program& lowered, const CudaCodegenOptions& options);
// CUDA C++ for a lowered program (cuda_lowering()). A custom kernel that ticket.h lets run as the
// tail of the one before shares its launch (split-k in one launch). Throws Error{InvalidArgument}
// for options out of range and tiles over the shared memory a block may use.
CudaSource generate_cuda_source(const kir::Program& program, const CudaCodegenOptions& options = {});
// The same for a concrete instance (every map concrete, every size bound). Throws
// Error{InvalidArgument} naming what it cannot lower.
CudaSource generate_cuda_source(const sgraph::Instance& instance, const CudaCodegenOptions& options = {});

}  // namespace prism::backend::cuda
