// The hand-written code of the CPU backend's generated sources, kept as real files in kernels/
// and embedded by the build byte for byte (docs/architecture.md, "Hand-written kernel code"):
// kernels/NAME.EXT is prism::embedded::NAME_EXT.
#pragma once

namespace prism::embedded {
extern const char amx_rules_h[];         // which way an AMX matmul reads B (amx_kernel.h reads it too)
extern const char amx_kernel_h[];        // prism_mm_amx: bf16 tiles over a streaming or cached B
extern const char amx_nt_kernel_h[];     // prism_mm_amx_nt: nn.Linear's W read in place
extern const char amx_split_kernel_h[];  // f16 products split into bf16 pairs on the tiles
extern const char micro_kernel_h[];      // the vector micro-kernel of every CPU matmul
extern const char measure_cpp[];         // the bandwidth and peak measurements (measure.h)
extern const char storage_types_h[];     // prism_f16, prism_bf16 (storage_types.h)
extern const char prelude_includes_h[];  // a fused kernel's includes and OpenBLAS's declarations
extern const char vector_math_h[];       // libmvec's vector variants (vector_math.h)
extern const char vector_loads_h[];      // vload/vstore/vfma of f32 and widened 16-bit vectors
extern const char runtime_h[];           // max/rescale helpers, OpenMP pinning, thread buffers
extern const char eager_prologue_h[];    // the eager baseline's first lines (eager.cpp)
}  // namespace prism::embedded
