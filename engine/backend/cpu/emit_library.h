// Lowering of a library kernel (one prism op over whole device tensors) to C++: simple parallel
// loop nests for elementwise ops (numpy broadcasting) and reductions, the micro-kernel for matmul.
#pragma once
#include <string>

#include "engine/backend/cpu/emit_ops.h"
#include "engine/sgraph/sgraph.h"

namespace prism::backend::cpu::detail {

// The statements computing `kernel` into `out` from `inputs` (views of whole dense tensors, in
// the kernel's input order), parallel over `threads` (a variable in scope). Throws
// Error{InvalidArgument} for an op it cannot lower.
std::string emit_library_kernel(const sgraph::LibraryKernel& kernel, const std::vector<View>& inputs, const View& out, int simd_bytes);

}  // namespace prism::backend::cpu::detail
