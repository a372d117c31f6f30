// Building blocks of the CPU code generator (codegen.h): C++ text for one op over
// strided views of f32 data whose sizes and strides are compile-time constants.
//
// A View is a base-pointer expression plus shape and element strides; the last stride is always 1
// (a box cut out of a row-major tensor, a dense tile, or a place in an output), so loads never copy
// and every op reads its operands where they lie.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/backend/view.h"
#include "engine/ir/program.h"

namespace prism::backend::cpu::detail {

using backend::View;
using backend::aligned_strides;


// How an op's code is laid out: `indent` for every line; `parallel` puts an OpenMP parallel loop
// (num_threads(threads)) on the outermost loops (library kernels; custom kernels are already
// parallel over their grid).
struct EmitContext {
  std::string indent = "  ";
  bool parallel = false;
  int simd_bytes = 32;
  int cores = 1;  // what a library kernel's parallel loop should keep busy
  int64_t cache_bytes = 0;        // what the caches hold between calls (TargetDescription::cache_capacity; 0: unknown)
  int64_t working_set_bytes = 0;  // every device tensor of the program together: what a call reads and writes
  bool grain = true;              // CodegenOptions::grain
  // A matmul's: what its last strip of B prefetches, the B the next matmul in the loop body reads
  // (empty: the rows right after its own B, which the loop reads next when only one matmul walks).
  std::string prefetch_after;
};

// C++ expression of an elementwise op on float expressions (the interpreter's formulas).
std::string unary_expr(Op op, const std::string& a);
std::string binary_expr(Op op, const std::string& a, const std::string& b);

// out = op(x), same shape.
std::string emit_unary(Op op, const View& x, const View& out, const EmitContext& ctx);
// out = op(a, b) with numpy broadcasting; out has the broadcast shape.
std::string emit_binary(Op op, const View& a, const View& b, const View& out, const EmitContext& ctx);
// out = expr(a, b) elementwise with broadcasting, expr building the C++ expression.
std::string emit_zip(const View& a, const View& b, const View& out, const std::function<std::string(const std::string&, const std::string&)>& expr,
                     const EmitContext& ctx);
// out = expr(x0, x1, …) elementwise, every x broadcast to out's shape.
std::string emit_zip_n(const std::vector<View>& xs, const View& out, const std::function<std::string(const std::vector<std::string>&)>& expr,
                       const EmitContext& ctx);
// out[...] = x[...], same shape.
std::string emit_copy(const View& x, const View& out, const EmitContext& ctx);
// out = sum/max/rms of x along `axis` (normalized); out has x's shape with the axis removed or 1.
std::string emit_reduce(Op op, int axis, const View& x, const View& out, const EmitContext& ctx);
// out += the sum of squares of x along `axis` (out: x's shape with the axis at 1), folded in order;
// `into` false: out = that sum (a sum of a square the code generator fused: fuse_squares.h).
std::string emit_square_sum_into(int axis, const View& x, const View& out, const EmitContext& ctx, bool into = true);
// out (+)= a @ b, batch dims broadcast; accumulate: out += a @ b (out already holds a value).
std::string emit_matmul(const View& a, const View& b, const View& out, bool accumulate, const EmitContext& ctx);
// out = a @ b through OpenBLAS's cblas_sgemm (a library matmul), one call per batch element, an
// operand whose columns are contiguous passed transposed; needs `threads` in scope. Empty when a
// layout is one BLAS cannot take (then emit_matmul).
std::string emit_vendor_matmul(const View& a, const View& b, const View& out, const EmitContext& ctx);

// The shared top of every generated source: includes, the vector type and the matmul micro-kernel.
std::string prelude(int simd_bytes, bool amx = false);  // amx: CodegenOptions::amx

// Register blocking of the micro-kernel for an M x N result: MR rows by NV vectors.
struct Blocking {
  int mr = 1, nv = 1;
  int64_t kc = 0;  // contraction chunk: a B panel (a strip of kc rows, about 3 KiB) that all row blocks
                   // use from L1; chunks are even
  double slots_per_fma = 0;  // the blocks' estimated FMA-port slots per FMA over the whole result (0: no
                             // full vector of columns, the scalar tail only)
  int64_t pack_ld = 0;  // B's K chunks copied first into rows this many elements apart (0: read in place)
};
// `b_resident`: the whole B stays in the caches between calls (a library matmul in a program whose
// tensors take at most a quarter of what they hold), so its strips need not be short for streaming.
// `ldb_bytes`: the distance between B's rows (0: unknown), whose L1 sets bound an f32 strip's rows,
// or, where many row blocks pass over a B that stays in the caches, make it copied first (pack_ld).
Blocking choose_blocking(int64_t m, int64_t n, int64_t k, int simd_bytes, DType b_dtype = DType::F32, bool b_resident = false,
                         int64_t ldb_bytes = 0);
// The packed NT form's blocks for an M x N result of a B stored transposed (an nn.Linear weight):
// choose_blocking's for an f32 panel in the caches, K chunks that keep a panel within 128 KiB;
// mr = 0 where fewer than two full row blocks pass over each panel (the NT kernel reads B^T in
// place then). The measurements: docs/tuning.md, "The NT kernel's blocks".
Blocking nt_packing(int64_t m, int64_t n, int64_t k, int simd_bytes);
// What a matmul's FMAs cost at this blocking, relative to a wide f32 tile's best blocking on the
// same registers (1 for that tile): a 16-bit B's widening, the broadcasts, B's loads folded into
// the FMAs, the accumulators' latency and the edge blocks, as choose_blocking counts them.
double widening_factor(const Blocking& blocking, DType b_dtype, int simd_bytes);

// How a library matmul that runs the micro-kernel (16-bit operands; f32 goes to OpenBLAS) splits
// C among the cores: chunks of `rows` x `columns`, B read as row pieces `columns` long.
struct MatmulChunks {
  int64_t rows = 1, columns = 1;
  int64_t count = 1;  // chunks of the whole batch: the parallel loop's iterations
};
MatmulChunks library_matmul_chunks(int64_t batch, int64_t m, int64_t n, DType b_dtype, int cores);

}  // namespace prism::backend::cpu::detail
