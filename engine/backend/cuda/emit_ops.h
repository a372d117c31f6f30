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
using backend::aligned_strides;

const char* storage_type(DType dtype);  // float, __half, __nv_bfloat16

enum class Spread { Block, Grid };

// Shared-memory tiles start on this boundary: wmma loads and stores need 32-byte (256-bit)
// aligned pointers.
inline constexpr int64_t kSharedSlotAlign = 32;

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
// out = expr(x0, x1, …) elementwise, every x broadcast to out's shape.
std::string emit_zip_n(const std::vector<View>& xs, const View& out, const std::function<std::string(const std::vector<std::string>&)>& expr,
                       const EmitContext& ctx);
// The elements from one row of `v` to the next where its rows lie evenly, 16-byte aligned
// (`element_bytes` each): a dense view's row length, or a matrix's (two dims after any of size 1)
// row stride when its rows are contiguous, at least a row long (padded: pad_tiles.h); else 0.
int64_t row_pitch(const View& v, int64_t element_bytes);
// out[...] = x[...] without conversion (same storage type), same shape: a tile's load.
std::string emit_raw_copy(const View& x, const View& out, const EmitContext& ctx);
// The same copy for a Load's staging into a dense shared tile (`element_bytes` per element): with
// 16-byte vectors (prism_copy16, threads spread over the vectors) when x's last dim is contiguous,
// its length and every outer stride of x are multiples of 16 bytes; else emit_raw_copy. The
// caller guarantees x.ptr is then 16-byte aligned (a load's offsets are multiples of tile[j] *
// strides[j] from a 256-byte aligned tensor) and out.ptr is (a shared slot).
std::string emit_tile_load(const View& x, const View& out, int64_t element_bytes, const EmitContext& ctx);
// out = sum/max/rms of x along `axis` (normalized); out has x's shape with the axis removed or 1.
std::string emit_reduce(Op op, int axis, const View& x, const View& out, const EmitContext& ctx);
// out += the sum of squares of x along `axis` (out: x's shape with the axis at 1).
std::string emit_square_sum_into(int axis, const View& x, const View& out, const EmitContext& ctx);
// Where a block matmul's result goes: written (rounded to out's storage) or, with `accumulate`,
// added to what out holds (an accumulator's f32 tile: kir::Stmt::into_accumulator). With
// `f32_shared` (out an f32 tile in shared memory) warps that split k add their partials into it
// atomically.
struct MatmulOut {
  bool f32_shared = false;
  bool accumulate = false;
};
// Up to this many outputs per thread, a block's scalar matmul advances them all in one k loop.
inline constexpr int64_t kMatmulOutputsPerThread = 8;
// out = a @ b (out += a @ b with `accumulate`), batch dims broadcast, f32 accumulation in order
// along the contraction.
std::string emit_matmul(const View& a, const View& b, const View& out, const EmitContext& ctx, bool accumulate = false);

// Whether m x n x k has a WMMA shape (m16n16k16, m8n32k16, m32n8k16).
bool wmma_fits(int64_t m, int64_t n, int64_t k);
// out = a @ b on tensor cores (nvcuda::wmma, f32 accumulators; needs <mma.h>), spread over the
// block's warps: a row-major and b row- or column-major (a W^T tile staged as W lies) 16-bit
// tiles of storage type `type` (batch dims dense or broadcast), out an f32 tile, each pointer
// 32-byte aligned. Shape m16n16k16, else m8n32k16, else m32n8k16, as the sizes allow; "" when none
// fits or a pointer the code would form is not provably 32-byte aligned (then emit_matmul). With
// `accumulate` the accumulator fragments start from out's values (out += a @ b).
std::string emit_wmma_matmul(const View& a, const View& b, const View& out, const char* type, const EmitContext& ctx, bool accumulate = false);

// out = a @ b on tensor cores with mma.sync m16n8k16 (f32 accumulators), spread over the block's
// warps, a warp per 16 x 8 output tile: each lane reads its fragment elements from a and b where
// they lie (any strides, any element type, rows, columns and k past the sizes read as 0) and
// rounds them to `type` (__half or __nv_bfloat16) in registers. For matmuls WMMA cannot take: an
// operand computed in f32, fewer than 8 rows, unaligned tiles. Where the block has at least twice
// as many warps as output tiles (a decode block's few rows on 256 or 512 threads) and `out` is an
// f32 tile in shared memory (`to.f32_shared`), k is split across them too: SPLIT warps per tile,
// each a slice of k, the first storing its partial and the others adding theirs with atomicAdd
// after a __syncthreads (docs/tuning.md, "Schedules"); into an accumulator (`to.accumulate`)
// every slice adds its partial atomically, with no barrier.
std::string emit_mma_matmul(const View& a, const View& b, const View& out, const char* type, const EmitContext& ctx, MatmulOut to = {});
// Whether emit_ldmatrix_mma takes an m x n x k matmul: a decode block's fewer than 16 rows, n and
// k multiples of 16.
bool ldmatrix_mma_fits(int64_t m, int64_t n, int64_t k);
// out = a @ b for a decode block (ldmatrix_mma_fits) on tensor cores through mma.sync m16n8k16
// computed as out^T = b^T a^T, so that b's columns fill the instruction's 16 rows and a's few rows
// its 8 columns (no wasted rows at 8 rows or fewer): b's fragments loaded by ldmatrix (its rows
// transposed; a column-major b, a W^T tile staged as W lies, as they are), a's by ldmatrix where
// `a_staged`, else gathered from wherever a lies and rounded to
// `type` in registers (a tile computed in f32: a normalized activation); f32 accumulators, spread
// over the block's warps and, with `to.f32_shared`, k split across them as emit_mma_matmul
// splits it. b ([k, n], row- or column-major) and a staged a ([m, k], row-major) dense 16-bit
// tiles of `type` in shared memory, 16-byte aligned; "" where the shapes or layouts do not fit (then WMMA or
// emit_mma_matmul).
std::string emit_ldmatrix_mma(const View& a, const View& b, const View& out, const char* type, const EmitContext& ctx, bool a_staged,
                              MatmulOut to = {});
// The warps per output tile emit_mma_matmul splits k over: a power of two, at most warps / tiles
// and k's 16-wide steps; 1 where it does not split.
int64_t mma_k_split(int64_t tiles, int64_t k, int threads);

// Index text shared by the emitters. "int" in a block, "long long" over the grid.
const char* index_type(const EmitContext& ctx);
// "i0 * s0 + i1 * s1" over coordinates prefix0, prefix1 … (dims of size 1 and stride 0 skipped).
std::string offset(const std::vector<int64_t>& strides, const std::vector<int64_t>& shape, const std::string& prefix, const EmitContext& ctx);
// v.ptr[offset(...)].
std::string element(const View& v, const std::vector<int64_t>& strides, const std::vector<int64_t>& shape, const EmitContext& ctx,
                    const std::string& prefix = "i");
// Declarations of the coordinates prefix<d> of the flat index `var` over `shape` (row-major; no
// coordinate for dims of size 1).
std::string coordinates(const std::vector<int64_t>& shape, const std::string& var, const std::string& prefix, const std::string& ind,
                        const EmitContext& ctx);
// The strides of a matmul operand's batch dims (all but its last two) against the result's batch
// shape (0 where broadcast).
std::vector<int64_t> batch_strides(const View& v, const std::vector<int64_t>& batch);

// The top of every generated source: the fp16/bf16 headers and the device helpers.
std::string prelude();

}  // namespace prism::backend::cuda::detail
