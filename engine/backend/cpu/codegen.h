// The CPU code generator: it prints the kernel IR (engine/backend/kernel_ir.h, lowered with
// cpu_lowering()) as C++, a shared object implementing the ABI of abi.h, compiled by compiler.h.
// It computes what sgraph::evaluate computes:
//
//   - a custom kernel becomes an OpenMP parallel loop over its (flattened) grid; each block runs
//     its loop-invariant statements once, the loop body F times, then the statements after the
//     loop. Loads are pointers into the device tensors (no copies); tiles and accumulators live in
//     a per-thread scratch buffer; a matmul that adds into an accumulator does so in place in a
//     register-blocked micro-kernel (emit_ops.h), which prefetches the next matmul's B;
//   - a library kernel becomes parallel loop nests over whole tensors;
//   - intermediate device tensors (a cross-block reduction's partials included) are static
//     buffers of the library, allocated on the first call.
//
// Every device tensor is dense row-major at the dtype the sGraph declares (f16 and bf16 stored as
// uint16_t, widened to f32 as they are loaded, computed in f32 and rounded where they are stored);
// all sizes are compile-time constants of the source.
#pragma once
#include <cstdint>
#include <string>

#include "engine/backend/kernel_ir.h"
#include "engine/sgraph/instantiate.h"

namespace prism::backend::cpu {

struct CodegenOptions {
  int cores = 1;        // the machine's: library kernels split their work into at least this many
                        // chunks (the entry gets `threads` at run time)
  int simd_bytes = 32;   // 32 (AVX2) or 64 (AVX-512): vector width to block for
  bool amx = false;      // bf16 x bf16 matmuls on AMX tiles (amx_kernel.h; the target has them)
  int64_t cache_bytes = 0;  // what the caches hold between calls (0: unknown): the library matmuls
                            // of a program whose tensors fit in a quarter of it block for a B there
  bool grain = true;  // loops below their grain on the calling thread (parallel_grain.h); false:
                      // every loop parallel, whatever its work (tests of the threaded code)
};

// C++17 source for a lowered program implementing the ABI of abi.h.
std::string generate_cpu_source(const kir::Program& program, const CodegenOptions& options = {});
// A concrete instance (every map concrete, every size bound) as the CPU prints it: lowered with
// cpu_lowering() (AMX's NT kernel reading any rows of a transposed B where `options` has AMX),
// sums of squares fused (fuse_squares.h). Throws Error{InvalidArgument} naming what it cannot lower.
kir::Program cpu_kernel_ir(const sgraph::Instance& instance, const CodegenOptions& options = {});
// The same printed: generate_cpu_source(cpu_kernel_ir(instance, options), options).
std::string generate_cpu_source(const sgraph::Instance& instance, const CodegenOptions& options = {});

}  // namespace prism::backend::cpu
