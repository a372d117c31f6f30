// Building blocks of the CUDA code generator (codegen.h): CUDA C++ text for one op over strided
// views whose sizes and strides are compile-time constants. Every op is spread over threads:
//
//   - Spread::Block: the threads of one block share the op (a tile in shared memory): thread t
//     takes elements t, t + T, t + 2T … of the result (a reduction: a warp per result element);
//   - Spread::Grid: every thread of the grid shares it (a library kernel over whole device
//     tensors in global memory), with a grid-stride loop.
//
// Values are read as f32 whatever their storage (prism_f32) and written through prism_put, which
// rounds to the storage type; all math is f32.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/ir/dtype.h"
#include "engine/backend/view.h"
#include "engine/ir/program.h"

namespace prism::backend::cuda::detail {

using backend::View;
using backend::dense_strides;
using backend::dense_view;
using backend::element_count;
using backend::aligned_strides;

const char* storage_type(DType dtype);  // float, __half, __nv_bfloat16
int64_t storage_bytes(DType dtype);

enum class Spread { Block, Grid };

struct EmitContext {
  std::string indent = "  ";
  Spread spread = Spread::Block;
  int threads = 128;  // threads per block (a multiple of 32)
};

// CUDA expression of an elementwise op on f32 expressions (the interpreter's formulas).
std::string unary_expr(Op op, const std::string& a);
std::string binary_expr(Op op, const std::string& a, const std::string& b);

// out = expr(x) elementwise, x broadcast to out's shape.
std::string emit_map(const View& x, const View& out, const std::function<std::string(const std::string&)>& expr, const EmitContext& ctx);
// out = expr(a, b) elementwise with numpy broadcasting; out has the broadcast shape.
std::string emit_zip(const View& a, const View& b, const View& out, const std::function<std::string(const std::string&, const std::string&)>& expr,
                     const EmitContext& ctx);
// out[...] = x[...] without conversion (same storage type), same shape: a tile's load.
std::string emit_raw_copy(const View& x, const View& out, const EmitContext& ctx);
// out = sum/max/rms of x along `axis` (normalized); out has x's shape with the axis removed or 1.
std::string emit_reduce(Op op, int axis, const View& x, const View& out, const EmitContext& ctx);
// out += the sum of squares of x along `axis` (out: x's shape with the axis at 1).
std::string emit_square_sum_into(int axis, const View& x, const View& out, const EmitContext& ctx);
// out = a @ b, batch dims broadcast, f32 accumulation in order along the contraction.
std::string emit_matmul(const View& a, const View& b, const View& out, const EmitContext& ctx);

// The top of every generated source: the fp16/bf16 headers and the device helpers.
std::string prelude();

}  // namespace prism::backend::cuda::detail
