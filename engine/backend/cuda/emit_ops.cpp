#include "engine/backend/cuda/emit_ops.h"

#include "engine/backend/cuda/kernel_sources.h"

#include <climits>
#include <optional>

#include "engine/backend/c_expr.h"
#include "engine/error.h"

namespace prism::backend::cuda::detail {

const char* storage_type(DType dtype) {
  switch (dtype) {
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::F32: break;
  }
  return "float";
}

std::string unary_expr(Op op, const std::string& a) { return elementwise_expr(op, {a}, kCudaC, "cuda codegen"); }

std::string binary_expr(Op op, const std::string& a, const std::string& b) { return elementwise_expr(op, {a, b}, kCudaC, "cuda codegen"); }

const char* index_type(const EmitContext& ctx) { return ctx.spread == Spread::Block ? "int" : "long long"; }

namespace {

// A stride literal: 64-bit when the offsets it builds may not fit an int.
std::string literal(int64_t v, bool wide) { return std::to_string(v) + (wide ? "LL" : ""); }

bool is_wide(const std::vector<int64_t>& strides, const std::vector<int64_t>& shape, const EmitContext& ctx) {
  if (ctx.spread == Spread::Grid) return true;
  int64_t most = 0;
  for (size_t d = 0; d < shape.size(); ++d) most += (shape[d] - 1) * (strides[d] < 0 ? -strides[d] : strides[d]);
  return most > INT_MAX / 2;
}

}  // namespace

// "i0 * s0 + i1 * s1" over coordinates prefix0, prefix1 … (dims of size 1 and stride 0 skipped).
std::string offset(const std::vector<int64_t>& strides, const std::vector<int64_t>& shape, const std::string& prefix, const EmitContext& ctx) {
  bool wide = is_wide(strides, shape, ctx);
  std::string off;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] == 0 || shape[d] == 1) continue;
    if (!off.empty()) off += " + ";
    off += prefix + std::to_string(d);
    if (strides[d] != 1) off += " * " + literal(strides[d], wide);
  }
  return off.empty() ? "0" : off;
}

std::string element(const View& v, const std::vector<int64_t>& strides, const std::vector<int64_t>& shape, const EmitContext& ctx,
                    const std::string& prefix) {
  return v.ptr + "[" + offset(strides, shape, prefix, ctx) + "]";
}

// Declarations of the coordinates prefix<d> of the flat index `var` over `shape` (row-major; no
// coordinate for dims of size 1).
std::string coordinates(const std::vector<int64_t>& shape, const std::string& var, const std::string& prefix, const std::string& ind,
                        const EmitContext& ctx) {
  std::string s;
  int64_t inner = 1;
  std::vector<std::string> lines(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1) {
      std::string e = inner == 1 ? var : var + " / " + literal(inner, ctx.spread == Spread::Grid);
      lines[d] = ind + "const " + index_type(ctx) + " " + prefix + std::to_string(d) + " = " + e + " % " +
                 literal(shape[d], ctx.spread == Spread::Grid) + ";\n";
    }
    inner *= shape[d];
  }
  for (const std::string& l : lines) s += l;
  return s;
}

std::vector<int64_t> batch_strides(const View& v, const std::vector<int64_t>& batch) {
  View bv{v.ptr, std::vector<int64_t>(v.shape.begin(), v.shape.end() - 2), std::vector<int64_t>(v.strides.begin(), v.strides.end() - 2)};
  return aligned_strides(bv, batch);
}

namespace {

// This thread's share of `count` items (index `var`) around body(indent).
std::string spread_loop(int64_t count, const std::string& var, const EmitContext& ctx, const std::function<std::string(const std::string&)>& body) {
  std::string ind = ctx.indent, s;
  std::string t = std::to_string(ctx.threads);
  if (ctx.spread == Spread::Block)
    s = ind + "for (int " + var + " = threadIdx.x; " + var + " < " + std::to_string(count) + "; " + var + " += " + t + ") {\n";
  else
    s = ind + "for (long long " + var + " = (long long)blockIdx.x * " + t + " + threadIdx.x; " + var + " < " + std::to_string(count) + "LL; " +
        var + " += (long long)gridDim.x * " + t + ") {\n";
  return s + body(ind + "  ") + ind + "}\n";
}

// A loop over every element of `shape` with coordinates i<d>, body(indent).
std::string element_loop(const std::vector<int64_t>& shape, const EmitContext& ctx, const std::function<std::string(const std::string&)>& body) {
  return spread_loop(element_count(shape), "e", ctx, [&](const std::string& ind) { return coordinates(shape, "e", "i", ind, ctx) + body(ind); });
}

}  // namespace

std::string emit_map(const View& x, const View& out, const std::function<std::string(const std::string&)>& expr, const EmitContext& ctx) {
  auto sx = aligned_strides(x, out.shape), so = aligned_strides(out, out.shape);
  return element_loop(out.shape, ctx, [&](const std::string& ind) {
    return ind + "prism_put(&" + element(out, so, out.shape, ctx) + ", " + expr("prism_f32(" + element(x, sx, out.shape, ctx) + ")") + ");\n";
  });
}

std::string emit_zip_n(const std::vector<View>& xs, const View& out, const std::function<std::string(const std::vector<std::string>&)>& expr,
                       const EmitContext& ctx) {
  const auto so = aligned_strides(out, out.shape);
  return element_loop(out.shape, ctx, [&](const std::string& ind) {
    std::vector<std::string> at;
    for (const View& x : xs) at.push_back("prism_f32(" + element(x, aligned_strides(x, out.shape), out.shape, ctx) + ")");
    return ind + "prism_put(&" + element(out, so, out.shape, ctx) + ", " + expr(at) + ");\n";
  });
}

std::string emit_zip(const View& a, const View& b, const View& out, const std::function<std::string(const std::string&, const std::string&)>& expr,
                     const EmitContext& ctx) {
  return emit_zip_n({a, b}, out, [&](const std::vector<std::string>& x) { return expr(x[0], x[1]); }, ctx);
}

std::string emit_raw_copy(const View& x, const View& out, const EmitContext& ctx) {
  auto sx = aligned_strides(x, out.shape), so = aligned_strides(out, out.shape);
  return element_loop(out.shape, ctx, [&](const std::string& ind) {
    return ind + element(out, so, out.shape, ctx) + " = " + element(x, sx, out.shape, ctx) + ";\n";
  });
}

int64_t row_pitch(const View& v, int64_t element_bytes) {
  if (v.strides == dense_strides(v.shape)) return v.shape.back();
  const View m = matrix_of(v);
  if (m.shape.size() != 2) return 0;
  const int64_t pitch = m.strides[0];
  return m.strides[1] == 1 && pitch >= m.shape[1] && pitch * element_bytes % 16 == 0 ? pitch : 0;
}

namespace {

// Whether every row of x can be copied as 16-byte vectors into `out`, whose rows lie evenly.
bool rows_in_vectors(const View& x, const View& out, int64_t element_bytes) {
  if (x.shape.empty() || out.shape != x.shape || row_pitch(out, element_bytes) == 0 || x.strides.back() != 1) return false;
  if (x.shape.back() * element_bytes % 16 != 0) return false;
  for (size_t d = 0; d + 1 < x.shape.size(); ++d)
    if (x.strides[d] * element_bytes % 16 != 0) return false;
  return true;
}

// The dim along which x is contiguous where that is not its last (a tile read transposed:
// nn.Linear's [out, in] weight staged as [in, out]) and every vector of 16 bytes along it can be
// read whole into the dense `out`; -1 where there is none.
int columns_in_vectors(const View& x, const View& out, int64_t element_bytes) {
  if (x.shape.size() < 2 || out.shape != x.shape || out.strides != dense_strides(out.shape) || x.strides.back() == 1) return -1;
  int along = -1;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (x.strides[d] == 1 && x.shape[d] > 1) {
      if (along >= 0) return -1;
      along = int(d);
    } else if (x.shape[d] > 1 && x.strides[d] * element_bytes % 16 != 0) {
      return -1;
    }
  }
  return along >= 0 && x.shape[size_t(along)] * element_bytes % 16 == 0 ? along : -1;
}

// A tile read transposed: each thread reads 16-byte vectors along x's contiguous dim `along` and
// writes their elements into `out` a row apart. `along` is the slowest index, so consecutive
// threads take the same rows of consecutive columns: their shared-memory writes lie side by side
// in a row (with `along` fastest, a warp's 32 writes fell 8 rows apart each, all in one bank), and
// the vectors of one column, consecutive in global memory, go to threads a row of columns apart.
std::string emit_column_load(const View& x, const View& out, int along, int64_t element_bytes, const EmitContext& ctx) {
  const int64_t per_vector = 16 / element_bytes;
  const std::vector<int64_t> dense = dense_strides(out.shape);
  std::vector<int64_t> shape{x.shape[size_t(along)] / per_vector}, sx{per_vector}, so{dense[size_t(along)] * per_vector};
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (int(d) != along) {
      shape.push_back(x.shape[d]);
      sx.push_back(x.strides[d]);
      so.push_back(dense[d]);
    }
  return spread_loop(element_count(shape), "e", ctx, [&](const std::string& ind) {
    return coordinates(shape, "e", "i", ind, ctx) + ind + "prism_scatter16(&" + out.ptr + "[" + offset(so, shape, "i", ctx) + "], " +
           std::to_string(dense[size_t(along)]) + ", &" + x.ptr + "[" + offset(sx, shape, "i", ctx) + "]);\n";
  });
}

}  // namespace

std::string emit_tile_load(const View& x, const View& out, int64_t element_bytes, const EmitContext& ctx) {
  if (const int along = columns_in_vectors(x, out, element_bytes); along >= 0) return emit_column_load(x, out, along, element_bytes, ctx);
  if (!rows_in_vectors(x, out, element_bytes)) return emit_raw_copy(x, out, ctx);
  const bool wide = ctx.spread == Spread::Grid;
  const int64_t row = x.shape.back(), pitch = row_pitch(out, element_bytes), per_vector = 16 / element_bytes, vectors_per_row = row / per_vector;
  const std::vector<int64_t> rows(x.shape.begin(), x.shape.end() - 1), row_strides(x.strides.begin(), x.strides.end() - 1);
  const std::string I = index_type(ctx);
  return spread_loop(element_count(rows) * vectors_per_row, "e", ctx, [&](const std::string& ind) {
    std::string s;
    std::string column = "0";
    if (vectors_per_row > 1) {
      s += ind + "const " + I + " r = e / " + literal(vectors_per_row, wide) + ";\n";
      column = std::string("e % ").append(literal(vectors_per_row, wide)).append(" * ").append(literal(per_vector, wide));
    } else {
      s += ind + "const " + I + " r = e;\n";
    }
    s += ind + "const " + I + " c = " + column + ";\n";
    s += coordinates(rows, "r", "i", ind, ctx);
    // Into shared memory the copies are asynchronous (all of a thread's in flight at once); the
    // caller ends them with prism_copy_wait() before the barrier.
    const char* copy = ctx.spread == Spread::Block ? "prism_copy16_async(&" : "prism_copy16(&";
    return s + ind + copy + out.ptr + "[r * " + literal(pitch, wide) + " + c], &" + x.ptr + "[" +
           offset(row_strides, rows, "i", ctx) + " + c]);\n";
  });
}

namespace {

// The fold of x along `axis` into out: `square` sums squares; `into` adds to out's value (an rms
// accumulator) instead of writing; `finish_rms` divides by the count and takes the root. A warp
// per result element (lanes stride the axis, then a shuffle tree) when the axis is long and the
// op is spread over a block; else a thread per result element, folding in order.
std::string fold(Op op, int axis, const View& x, const View& out, bool into, const EmitContext& ctx) {
  const Fold fo = fold_over(axis, x, out);
  const std::vector<int64_t>& shape = fo.shape;
  const int64_t k = fo.k;
  const bool square = op == Op::Rms;
  const bool max = op == Op::Max;
  auto combine = [&](const std::string& acc, const std::string& v) {
    if (max) return "prism_max_into(" + acc + ", " + v + ")";
    return acc + " + " + v;
  };
  const std::string init = max ? "prism_neg_inf()" : "0.0f";
  const std::string value = square ? "prism_square(prism_f32(xr[j * " + literal(fo.step, ctx.spread == Spread::Grid) + "]))"
                                   : "prism_f32(xr[j * " + literal(fo.step, ctx.spread == Spread::Grid) + "])";
  auto result = [&](const std::string& ind) {
    std::string dst = element(out, fo.out_strides, shape, ctx);
    std::string v = into ? "prism_f32(" + dst + ") + acc" : op == Op::Rms ? "sqrtf(acc / " + std::to_string(k) + ".0f)" : "acc";
    return ind + "prism_put(&" + dst + ", " + v + ");\n";
  };
  const int64_t results = element_count(shape);
  if (ctx.spread == Spread::Block && k >= 32) {
    std::string ind = ctx.indent, s = ind + "{\n";
    const int warps = ctx.threads / 32;
    s += ind + "  const int lane = threadIdx.x & 31;\n";
    s += ind + "  for (int r = threadIdx.x >> 5; r < " + std::to_string(results) + "; r += " + std::to_string(warps) + ") {\n";
    std::string in2 = ind + "    ";
    s += coordinates(shape, "r", "i", in2, ctx);
    s += in2 + "const auto* xr = &" + element(x, fo.x_strides, shape, ctx) + ";\n";
    s += in2 + "float acc = " + init + ";\n";
    s += in2 + "for (int j = lane; j < " + std::to_string(k) + "; j += 32) acc = " + combine("acc", value) + ";\n";
    s += in2 + "for (int m = 16; m > 0; m >>= 1) acc = " + combine("acc", "__shfl_xor_sync(0xffffffffu, acc, m)") + ";\n";
    s += in2 + "if (lane == 0) {\n" + result(in2 + "  ") + in2 + "}\n";
    return s + ind + "  }\n" + ind + "}\n";
  }
  return spread_loop(results, "r", ctx, [&](const std::string& ind) {
    std::string s = coordinates(shape, "r", "i", ind, ctx);
    s += ind + "const auto* xr = &" + element(x, fo.x_strides, shape, ctx) + ";\n";
    s += ind + "float acc = " + init + ";\n";
    s += ind + "for (" + index_type(ctx) + " j = 0; j < " + std::to_string(k) + "; ++j) acc = " + combine("acc", value) + ";\n";
    return s + result(ind);
  });
}

}  // namespace

std::string emit_reduce(Op op, int axis, const View& x, const View& out, const EmitContext& ctx) {
  if (op != Op::Sum && op != Op::Max && op != Op::Rms)
    throw Error(Error::Kind::InvalidArgument, std::string("cuda codegen: '") + op_name(op) + "' is not a reduction it can lower");
  return fold(op, axis, x, out, false, ctx);
}

std::string emit_square_sum_into(int axis, const View& x, const View& out, const EmitContext& ctx) {
  return fold(Op::Rms, axis, x, out, true, ctx);
}

namespace {

// A block's matmul with `per` outputs per thread (e, e + T, … for thread e of T): one k loop
// advances all of them, so a thread has `per` independent FMA chains in flight instead of one
// after the other. Each output still sums its products in order along k.
std::string blocked_matmul(const View& a, const View& b, const View& out, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb,
                           const std::vector<int64_t>& so, int64_t k, int64_t per, const EmitContext& ctx, bool accumulate) {
  const size_t ra = a.shape.size(), rb = b.shape.size();
  const int64_t outputs = element_count(out.shape);
  const std::string ind = ctx.indent, in2 = ind + "  ";
  const std::string astep = literal(a.strides[ra - 1], false), bstep = literal(b.strides[rb - 2], false);
  std::string s = ind + "// scalar matmul: " + std::to_string(per) + " outputs per thread in one pass over k\n" + ind + "{\n";
  std::string fma, store;
  for (int64_t u = 0; u < per; ++u) {
    const std::string U = std::to_string(u), e = "e" + U, i = "i" + U + "_";
    const std::string at = "int(threadIdx.x) + " + std::to_string(u * ctx.threads), inside = at + " < " + std::to_string(outputs);
    // The last thread's extra outputs repeat the last one (read, never stored).
    const bool clamp = (u + 1) * ctx.threads > outputs;
    s += in2 + "const int " + e + " = " + (clamp ? inside + " ? " + at + " : " + std::to_string(outputs - 1) : at) + ";\n";
    s += coordinates(out.shape, e, i, in2, ctx);
    s += in2 + "const auto* ar" + U + " = &" + element(a, sa, out.shape, ctx, i) + ";\n";
    s += in2 + "const auto* bc" + U + " = &" + element(b, sb, out.shape, ctx, i) + ";\n";
    s += in2 + "float acc" + U + " = " + (accumulate ? "prism_f32(" + element(out, so, out.shape, ctx, i) + ")" : std::string("0.0f")) + ";\n";
    fma += in2 + "  acc" + U + " += prism_f32(ar" + U + "[k * " + astep + "]) * prism_f32(bc" + U + "[k * " + bstep + "]);\n";
    const std::string put = "prism_put(&" + element(out, so, out.shape, ctx, i) + ", acc" + U + ");\n";
    store += in2 + (clamp ? "if (" + inside + ") " : "") + put;
  }
  s += in2 + "#pragma unroll 2\n" + in2 + "for (int k = 0; k < " + std::to_string(k) + "; ++k) {\n" + fma + in2 + "}\n";
  return s + store + ind + "}\n";
}

}  // namespace

std::string emit_matmul(const View& a, const View& b, const View& out, const EmitContext& ctx, bool accumulate) {
  size_t ra = a.shape.size(), rb = b.shape.size(), ro = out.shape.size();
  if (ra < 2 || rb < 2 || ro < 2) throw Error(Error::Kind::InvalidArgument, "cuda codegen: matmul needs operands of rank 2 or more");
  int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  if (b.shape[rb - 2] != k || out.shape[ro - 2] != m || out.shape[ro - 1] != n)
    throw Error(Error::Kind::InvalidArgument, "cuda codegen: matmul sizes do not agree");
  // Batch dims broadcast as elementwise ops do; the last two dims are walked explicitly.
  const std::vector<int64_t> batch(out.shape.begin(), out.shape.end() - 2);
  auto walked = [&](const View& v) {  // the batch strides, then the two dims set below
    auto s = batch_strides(v, batch);
    s.push_back(0);
    s.push_back(0);
    return s;
  };
  auto sa = walked(a), sb = walked(b), so = aligned_strides(out, out.shape);
  sa[ro - 2] = a.strides[ra - 2];  // row i of a
  sb[ro - 1] = b.strides[rb - 1];  // column j of b
  const bool wide = ctx.spread == Spread::Grid;
  const int64_t outputs = element_count(out.shape), per_thread = (outputs + ctx.threads - 1) / ctx.threads;
  if (ctx.spread == Spread::Block && per_thread >= 2 && per_thread <= kMatmulOutputsPerThread)
    return blocked_matmul(a, b, out, sa, sb, so, k, per_thread, ctx, accumulate);
  return ctx.indent + "// scalar matmul: a thread per output element\n" + element_loop(out.shape, ctx, [&](const std::string& ind) {
    std::string s = ind + "const auto* ar = &" + element(a, sa, out.shape, ctx) + ";\n";
    s += ind + "const auto* bc = &" + element(b, sb, out.shape, ctx) + ";\n";
    s += ind + "float acc = " + (accumulate ? "prism_f32(" + element(out, so, out.shape, ctx) + ")" : std::string("0.0f")) + ";\n";
    s += ind + "#pragma unroll 4\n";
    s += ind + "for (int k = 0; k < " + std::to_string(k) + "; ++k) acc += prism_f32(ar[k * " + literal(a.strides[ra - 1], wide) +
         "]) * prism_f32(bc[k * " + literal(b.strides[rb - 2], wide) + "]);\n";
    return s + ind + "prism_put(&" + element(out, so, out.shape, ctx) + ", acc);\n";
  });
}

namespace {

struct WmmaShape {
  int64_t m, n, k;
};

// The first WMMA shape whose tiles cover an m x n result over a contraction of k.
std::optional<WmmaShape> wmma_shape(int64_t m, int64_t n, int64_t k) {
  if (k % 16 != 0) return std::nullopt;
  for (WmmaShape s : {WmmaShape{16, 16, 16}, WmmaShape{8, 32, 16}, WmmaShape{32, 8, 16}})
    if (m % s.m == 0 && n % s.n == 0) return s;
  return std::nullopt;
}

// Row-major in its last two dims (the layout wmma::row_major and mem_row_major read).
bool row_major_rows(const View& v) {
  size_t r = v.shape.size();
  return r >= 2 && v.strides[r - 1] == 1 && v.strides[r - 2] >= v.shape[r - 1];
}

// Column-major in its last two dims (a W^T tile staged as W lies): wmma::col_major.
bool col_major_rows(const View& v) {
  size_t r = v.shape.size();
  return r >= 2 && v.strides[r - 2] == 1 && v.strides[r - 1] >= v.shape[r - 2];
}

// How a block's warps split a matmul into WMMA tiles: tm x tn output tiles per batch element.
struct WmmaPlan {
  WmmaShape shape;
  int64_t k, lda, ldb, ldo, tm, tn;
  std::vector<int64_t> batch, sa, sb, so;  // the result's batch shape, each view's strides along it
  bool b_col = false;                      // b column-major (ldb: its columns' stride)
};

std::optional<WmmaPlan> plan_wmma(const View& a, const View& b, const View& out) {
  const bool b_col = !row_major_rows(b) && col_major_rows(b);
  if (!row_major_rows(a) || !(row_major_rows(b) || b_col) || !row_major_rows(out)) return std::nullopt;
  size_t ra = a.shape.size(), rb = b.shape.size(), ro = out.shape.size();
  const int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  if (b.shape[rb - 2] != k || out.shape[ro - 2] != m || out.shape[ro - 1] != n) return std::nullopt;
  std::optional<WmmaShape> shape = wmma_shape(m, n, k);
  if (!shape) return std::nullopt;
  WmmaPlan p{*shape, k, a.strides[ra - 2], b.strides[b_col ? rb - 1 : rb - 2], out.strides[ro - 2], m / shape->m, n / shape->n, {}, {}, {}, {},
             b_col};
  p.batch.assign(out.shape.begin(), out.shape.end() - 2);
  p.sa = batch_strides(a, p.batch), p.sb = batch_strides(b, p.batch), p.so = batch_strides(out, p.batch);
  return p;
}

// Whether every pointer the code forms is 32-byte aligned, given 32-byte aligned bases: each is a
// base plus multiples of these byte steps (16-bit operands, f32 result). Leading dimensions must
// be multiples of 16 bytes.
bool wmma_aligned(const WmmaPlan& p) {
  const auto [M, N, K] = p.shape;
  std::vector<int64_t> steps;
  for (size_t d = 0; d < p.batch.size(); ++d)
    if (p.batch[d] > 1) steps.insert(steps.end(), {p.sa[d] * 2, p.sb[d] * 2, p.so[d] * 4});
  if (p.tm > 1) steps.insert(steps.end(), {M * p.lda * 2, M * p.ldo * 4});
  if (p.tn > 1) steps.insert(steps.end(), {N * (p.b_col ? p.ldb : 1) * 2, N * 4});
  if (p.k > K) steps.insert(steps.end(), {K * 2, K * (p.b_col ? 1 : p.ldb) * 2});
  for (int64_t step : steps)
    if (step % 32 != 0) return false;
  return p.lda * 2 % 16 == 0 && p.ldb * 2 % 16 == 0 && p.ldo * 4 % 16 == 0;
}

// Declarations of this warp's tile t: batch coordinates i<d>, tile row ti, tile column tj.
std::string wmma_tile_index(const WmmaPlan& p, const std::string& ind, const EmitContext& ctx) {
  const int64_t tiles = p.tm * p.tn;
  std::string s;
  if (element_count(p.batch) > 1) {
    s += ind + "const int bi = t" + (tiles > 1 ? std::string(" / ").append(std::to_string(tiles)) : std::string()) + ";\n";
    s += coordinates(p.batch, "bi", "i", ind, ctx);
  }
  if (p.tm > 1) s += ind + "const int ti = t / " + std::to_string(p.tn) + " % " + std::to_string(p.tm) + ";\n";
  if (p.tn > 1) s += ind + "const int tj = t % " + std::to_string(p.tn) + ";\n";
  return s;
}

}  // namespace

bool wmma_fits(int64_t m, int64_t n, int64_t k) { return wmma_shape(m, n, k).has_value(); }

std::string emit_wmma_matmul(const View& a, const View& b, const View& out, const char* type, const EmitContext& ctx, bool accumulate) {
  std::optional<WmmaPlan> plan = plan_wmma(a, b, out);
  if (!plan || !wmma_aligned(*plan)) return "";
  const WmmaPlan& p = *plan;
  const auto [M, N, K] = p.shape;
  const std::string row_a = p.tm > 1 ? std::string(" + ti * ").append(std::to_string(M * p.lda)) : "";
  const std::string row_o = p.tm > 1 ? std::string(" + ti * ").append(std::to_string(M * p.ldo)) : "";
  const std::string col = p.tn > 1 ? std::string(" + tj * ").append(std::to_string(N)) : "";
  const std::string col_b = p.tn > 1 ? std::string(" + tj * ").append(std::to_string(N * (p.b_col ? p.ldb : 1))) : "";
  const std::string ind = ctx.indent, in2 = ind + "  ", in3 = in2 + "  ";
  const std::string frag = std::to_string(M) + ", " + std::to_string(N) + ", " + std::to_string(K) + ", ";
  std::string s = ind + "// tensor cores: wmma m" + std::to_string(M) + "n" + std::to_string(N) + "k" + std::to_string(K) + " " + type + "\n";
  s += ind + "{\n" + in2 + "namespace wmma = nvcuda::wmma;\n";
  s += in2 + "for (int t = threadIdx.x >> 5; t < " + std::to_string(element_count(p.batch) * p.tm * p.tn) + "; t += " +
       std::to_string(ctx.threads / 32) + ") {\n";
  s += wmma_tile_index(p, in3, ctx);
  s += in3 + "const " + type + "* ap = &" + a.ptr + "[" + offset(p.sa, p.batch, "i", ctx) + row_a + "];\n";
  s += in3 + "const " + type + "* bp = &" + b.ptr + "[" + offset(p.sb, p.batch, "i", ctx) + col_b + "];\n";
  s += in3 + "float* op = &" + out.ptr + "[" + offset(p.so, p.batch, "i", ctx) + row_o + col + "];\n";
  s += in3 + "wmma::fragment<wmma::accumulator, " + frag + "float> acc;\n";
  s += in3 + (accumulate ? "wmma::load_matrix_sync(acc, op, " + std::to_string(p.ldo) + ", wmma::mem_row_major);\n" : std::string("wmma::fill_fragment(acc, 0.0f);\n"));
  s += in3 + "for (int kk = 0; kk < " + std::to_string(p.k) + "; kk += " + std::to_string(K) + ") {\n";
  s += in3 + "  wmma::fragment<wmma::matrix_a, " + frag + type + ", wmma::row_major> fa;\n";
  s += in3 + "  wmma::fragment<wmma::matrix_b, " + frag + type + (p.b_col ? ", wmma::col_major> fb;\n" : ", wmma::row_major> fb;\n");
  s += in3 + "  wmma::load_matrix_sync(fa, ap + kk, " + std::to_string(p.lda) + ");\n";
  s += in3 + "  wmma::load_matrix_sync(fb, bp + kk" + (p.b_col ? std::string() : " * " + std::to_string(p.ldb)) + ", " + std::to_string(p.ldb) + ");\n";
  s += in3 + "  wmma::mma_sync(acc, fa, fb, acc);\n";
  s += in3 + "}\n";
  s += in3 + "wmma::store_matrix_sync(op, acc, " + std::to_string(p.ldo) + ", wmma::mem_row_major);\n";
  return s + in2 + "}\n" + ind + "}\n";
}

std::string prelude() {
  return embedded::prelude_cuh + elementwise_functions(kCudaC);
}

}  // namespace prism::backend::cuda::detail
