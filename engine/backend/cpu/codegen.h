// Lowering an instantiated sGraph to C++ for the CPU (design.md §6): a shared object implementing
// the ABI of abi.h, compiled by compiler.h. It computes what sgraph::evaluate computes:
//
//   - a custom kernel becomes an OpenMP parallel loop over its (flattened) grid; each block runs
//     its loop-invariant ops once, the loop body F times, then the ops after the loop. Loads are
//     views into the device tensors (no copies); computed tiles and accumulators live in a
//     per-thread scratch buffer; a matmul folded by a sum accumulator accumulates in place in a
//     register-blocked micro-kernel; an op whose only use is a save writes straight to its place;
//   - a library kernel becomes parallel loop nests (emit_library.h);
//   - intermediate device tensors (a cross-block reduction's partials included) are static
//     buffers of the library, allocated on the first call.
//
// Every device tensor is dense row-major f32 whatever the sGraph declares (f16 and bf16 are
// computed and stored as f32); all sizes are compile-time constants of the source.
#pragma once
#include <string>

#include "engine/sgraph/instantiate.h"

namespace prism::backend::cpu {

struct CodegenOptions {
  int threads_hint = 0;  // informational only; the entry gets `threads` at run time
  int simd_bytes = 32;   // 32 (AVX2) or 64 (AVX-512): vector width to block for
};

// C++17 source for a concrete instance (every map concrete, every size bound) implementing the
// ABI of abi.h. Throws Error{InvalidArgument} naming what it cannot lower.
std::string generate_cpu_source(const sgraph::Instance& instance, const CodegenOptions& options = {});

}  // namespace prism::backend::cpu
