// The hand-written code of the CUDA backend's generated sources, kept as real files in kernels/
// and embedded by the build byte for byte (docs/architecture.md, "Hand-written kernel code"):
// kernels/NAME.EXT is prism::embedded::NAME_EXT.
#pragma once

namespace prism::embedded {
extern const char prelude_cuh[];         // every generated CUDA source's first lines (emit_ops.h, prelude)
extern const char eager_prologue_cuh[];  // the eager baseline's first lines (eager.cpp)
extern const char export_runtime_cuh[];  // an export's launcher's runtime calls (export.cpp)
}  // namespace prism::embedded
