#include "engine/backend/cpu/emit_ops.h"

#include <algorithm>
#include <functional>

#include "engine/backend/c_expr.h"
#include "engine/backend/cpu/parallel_grain.h"
#include "engine/error.h"
#include "engine/ir/shape.h"

namespace prism::backend::cpu::detail {

std::string unary_expr(Op op, const std::string& a) { return elementwise_expr(op, {a}, kHostC, "codegen"); }

std::string binary_expr(Op op, const std::string& a, const std::string& b) { return elementwise_expr(op, {a, b}, kHostC, "codegen"); }

namespace {

// "ptr[i0*s0 + i1*s1]" over loop indices named prefix0, prefix1 … (dims of size 1 have no loop).
std::string element(const View& v, const std::vector<int64_t>& strides, const std::vector<int64_t>& shape,
                    const std::string& prefix = "i") {
  std::string off;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] == 0 || shape[d] == 1) continue;
    if (!off.empty()) off += " + ";
    off += prefix + std::to_string(d);
    if (strides[d] != 1) off += " * " + std::to_string(strides[d]) + "L";
  }
  return v.ptr + "[" + (off.empty() ? "0" : off) + "]";
}

// A loop nest over `shape` (no loop for dims of size 1) around body(indent), the innermost loop
// left to the vectorizer. With ctx.parallel, the outer loops run as one OpenMP parallel loop
// (collapsed), or the one loop as a parallel simd loop, as the eager baseline's (eager.cpp): GCC
// does not vectorize a loop collapsed into the one outside it (docs/tuning.md, "The CPU's other kernel choices").
std::string loop_nest(const std::vector<int64_t>& shape, const EmitContext& ctx, const std::function<std::string(const std::string&)>& body,
                      const std::string& prefix = "i") {
  std::vector<size_t> dims;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) dims.push_back(d);
  std::string out, ind = ctx.indent;
  // Below the grain the nest runs on the calling thread (parallel_grain.h).
  const bool parallel = ctx.parallel && (!ctx.grain || above_grain(double(element_count(shape)), true));
  const bool split = parallel && dims.size() > 1;  // outer loops collapsed, the innermost in braces
  if (parallel && dims.size() == 1) out += ind + "#pragma omp parallel for simd num_threads(threads) schedule(static)\n";
  if (split) out += ind + "#pragma omp parallel for collapse(" + std::to_string(dims.size() - 1) + ") num_threads(threads) schedule(static)\n";
  for (size_t k = 0; k < dims.size(); ++k) {
    std::string i = prefix + std::to_string(dims[k]);
    if (k + 1 == dims.size() && split) {
      out += ind + "{\n";
      ind += "  ";
    }
    if (k + 1 == dims.size() && (split || !parallel)) out += ind + "#pragma GCC ivdep\n";
    out += ind + "for (long " + i + " = 0; " + i + " < " + std::to_string(shape[dims[k]]) + "; ++" + i + ")\n";
    ind += "  ";
  }
  out += ind + "{\n" + body(ind + "  ") + ind + "}\n";
  if (split) out += ind.substr(4) + "}\n";
  return out;
}

// Rows of f16 go through f32 chunks in an elementwise nest: a chunk of each f16 operand that is
// contiguous along the innermost loop is widened by prism_widen_f16 (storage_types.h: F16C's
// vcvtph2ps inline, 8 lanes an instruction), the loop computes into an f32 chunk, and
// prism_narrow_f16 rounds it into an f16 output. Element by element, each f16 conversion is a call
// per 8 lanes that saves and reloads every live vector register (docs/tuning.md, "The CPU's other kernel choices").
constexpr int64_t kF16Chunk = 128;

// out[...] = expr(xs[...]...) over out.shape, through f32 chunks where that applies (above); ""
// where it does not (inside a parallel loop, no f16 row, an innermost loop shorter than 16).
std::string staged_nest(const std::vector<View>& xs, const View& out, const std::function<std::string(const std::vector<std::string>&)>& expr,
                        const EmitContext& ctx) {
  if (ctx.parallel) return "";
  size_t d = out.shape.size();
  while (d > 0 && out.shape[d - 1] == 1) --d;
  if (d == 0 || out.shape[d - 1] < 16) return "";
  --d;  // the innermost loop's dim
  const auto so = aligned_strides(out, out.shape);
  auto contiguous_f16 = [&](const View& v, const std::vector<int64_t>& strides) { return v.dtype == DType::F16 && strides[d] == 1; };
  std::vector<std::vector<int64_t>> sx;
  bool any = contiguous_f16(out, so);
  for (const View& x : xs) {
    sx.push_back(aligned_strides(x, out.shape));
    any = any || contiguous_f16(x, sx.back());
  }
  if (!any) return "";
  std::vector<int64_t> outer = out.shape;
  outer[d] = 1;
  // Built by append: GCC 12 misreports `"i" + std::string` under -Wrestrict (PR 105329).
  const std::string D = std::to_string(d), i = std::string("i").append(D), c = std::string("c").append(D), n = std::string("n").append(D),
                    N = std::to_string(out.shape[d]), K = std::to_string(kF16Chunk);
  // The address of v's element at the chunk's start: its element with the innermost index at c.
  auto start = [&](const View& v, const std::vector<int64_t>& strides) {
    return std::string("({ const long ").append(i).append(" = ").append(c).append("; &").append(element(v, strides, out.shape)).append("; })");
  };
  return loop_nest(outer, ctx, [&](const std::string& ind) {
    std::string s = ind + "for (long " + c + " = 0; " + c + " < " + N + "; " + c + " += " + K + ") {\n";
    const std::string in2 = ind + "  ";
    s += in2 + "const long " + n + " = " + N + " - " + c + " < " + K + " ? " + N + " - " + c + " : " + K + ";\n";
    std::vector<std::string> at;
    for (size_t k = 0; k < xs.size(); ++k) {
      if (!contiguous_f16(xs[k], sx[k])) {
        at.push_back(element(xs[k], sx[k], out.shape));
        continue;
      }
      const std::string w = std::string("w").append(std::to_string(k));
      s += in2 + "float " + w + "[" + K + "];\n" + in2 + "prism_widen_f16(" + start(xs[k], sx[k]) + ", " + w + ", " + n + ");\n";
      at.push_back(w + "[" + i + " - " + c + "]");
    }
    const bool narrow = contiguous_f16(out, so);
    if (narrow) s += in2 + "float wo[" + K + "];\n";
    s += in2 + "#pragma GCC ivdep\n" + in2 + "for (long " + i + " = " + c + "; " + i + " < " + c + " + " + n + "; ++" + i + ")\n";
    s += in2 + "  " + (narrow ? "wo[" + i + " - " + c + "]" : element(out, so, out.shape)) + " = " + expr(at) + ";\n";
    if (narrow) s += in2 + "prism_narrow_f16(wo, " + start(out, so) + ", " + n + ");\n";
    return s + ind + "}\n";
  });
}

}  // namespace

std::string emit_unary(Op op, const View& x, const View& out, const EmitContext& ctx) {
  return emit_zip_n({x}, out, [op](const std::vector<std::string>& a) { return unary_expr(op, a[0]); }, ctx);
}

std::string emit_zip_n(const std::vector<View>& xs, const View& out, const std::function<std::string(const std::vector<std::string>&)>& expr,
                       const EmitContext& ctx) {
  if (std::string s = staged_nest(xs, out, expr, ctx); !s.empty()) return s;
  const auto so = aligned_strides(out, out.shape);
  return loop_nest(out.shape, ctx, [&](const std::string& ind) {
    std::vector<std::string> at;
    for (const View& x : xs) at.push_back(element(x, aligned_strides(x, out.shape), out.shape));
    return ind + element(out, so, out.shape) + " = " + expr(at) + ";\n";
  });
}

std::string emit_zip(const View& a, const View& b, const View& out, const std::function<std::string(const std::string&, const std::string&)>& expr,
                     const EmitContext& ctx) {
  return emit_zip_n({a, b}, out, [&](const std::vector<std::string>& x) { return expr(x[0], x[1]); }, ctx);
}

std::string emit_binary(Op op, const View& a, const View& b, const View& out, const EmitContext& ctx) {
  binary_expr(op, "", "");  // throws for an op that is not binary
  return emit_zip(a, b, out, [op](const std::string& x, const std::string& y) { return binary_expr(op, x, y); }, ctx);
}

// out = x where x is out transposed (a W^T tile staged in f32 for the matmul micro-kernel, from
// f32 or 16-bit storage): blocks of kW x kW, kW loads contiguous along out's columns (widened as
// they load), transposed in registers (prism_transpose), kW stores along its rows; the edges
// element by element. Empty where that does not apply. (Element by element is many times slower:
// docs/tuning.md, "The CPU's other kernel choices".)
std::string transposing_copy(const View& x, const View& out, const EmitContext& ctx) {
  const size_t r = out.shape.size();
  if (ctx.parallel || r < 2 || out.dtype != DType::F32) return "";
  for (size_t i = 0; i + 2 < r; ++i)
    if (out.shape[i] != 1) return "";
  const auto sx = aligned_strides(x, out.shape), so = aligned_strides(out, out.shape);
  const int64_t rows = out.shape[r - 2], cols = out.shape[r - 1], w = ctx.simd_bytes / 4;
  if (sx[r - 2] != 1 || sx[r - 1] == 1 || so[r - 1] != 1 || rows < w || cols < w) return "";
  const std::string sc = std::to_string(sx[r - 1]) + "L", ld = std::to_string(so[r - 2]) + "L", R = std::to_string(rows / w * w),
                    C = std::to_string(cols / w * w), ind = ctx.indent;
  // Columns outermost: each of kW source rows is read along its length (a run, not a line per pass).
  std::string s = ind + "for (long j0 = 0; j0 < " + C + "; j0 += kW)\n" + ind + "  for (long i0 = 0; i0 < " + R + "; i0 += kW) {\n";
  s += ind + "    vf r[kW];\n" + ind + "    for (long j = 0; j < kW; ++j) r[j] = vload(" + x.ptr + " + i0 + (j0 + j) * " + sc + ");\n";
  s += ind + "    prism_transpose(r);\n" + ind + "    for (long i = 0; i < kW; ++i) vstore(" + out.ptr + " + (i0 + i) * " + ld + " + j0, r[i]);\n" + ind + "  }\n";
  // The right edge (every row), then the bottom edge (the full columns).
  auto edge = [&](const std::string& i_from, const std::string& i_to, const std::string& j_from, const std::string& j_to) {
    return ind + "for (long i = " + i_from + "; i < " + i_to + "; ++i)\n" + ind + "  for (long j = " + j_from + "; j < " + j_to + "; ++j) " +
           out.ptr + "[i * " + ld + " + j] = " + x.ptr + "[i + j * " + sc + "];\n";
  };
  if (cols % w) s += edge("0", std::to_string(rows), C, std::to_string(cols));
  if (rows % w) s += edge(R, std::to_string(rows), "0", C);
  return s;
}

std::string emit_copy(const View& x, const View& out, const EmitContext& ctx) {
  if (std::string t = transposing_copy(x, out, ctx); !t.empty()) return t;
  return emit_zip_n({x}, out, [](const std::vector<std::string>& a) { return a[0]; }, ctx);
}

// Code declaring `float acc` = the sum (of squares) of xr[0..k) for a contiguous xr: vector
// partial sums (so not the interpreter's order, only its value up to rounding), then the rest.
std::string contiguous_fold(const std::string& ind, int64_t k, bool square, const std::string& start) {
  std::string f = square ? "vfma(a, a, s0)" : "s0 + a", g = square ? "vfma(b, b, s1)" : "s1 + b";
  std::string s = ind + "vf s0 = {}, s1 = {};\n" + ind + "long j = 0;\n";
  s += ind + "for (; j + 2 * kW <= " + std::to_string(k) + "; j += 2 * kW) { const vf a = vload(xr + j), b = vload(xr + j + kW); s0 = " + f +
       "; s1 = " + g + "; }\n";
  s += ind + "for (; j + kW <= " + std::to_string(k) + "; j += kW) { const vf a = vload(xr + j); s0 = " + f + "; }\n";
  s += ind + "float acc = " + start + " + prism_hsum(s0 + s1);\n";
  s += ind + "for (; j < " + std::to_string(k) + "; ++j) { float v = xr[j]; acc += " + (square ? "v * v" : "v") + "; }\n";
  return s;
}

// Code declaring `float acc` = the max of xr[0..k) for a contiguous xr, NaN when any element is:
// lane-wise maxima and a lane-wise NaN mask (the interpreter's in-order fold has a branch per
// element and does not vectorize: a row max of attention's scores cost as much as its exp).
std::string contiguous_max(const std::string& ind, int64_t k) {
  const std::string K = std::to_string(k);
  std::string s = ind + "vf m0 = vbroadcast(-__builtin_inff()), m1 = m0;\n" + ind + "decltype(m0 != m0) bad = {};\n" + ind + "long j = 0;\n";
  s += ind + "for (; j + 2 * kW <= " + K + "; j += 2 * kW) { const vf a = vload(xr + j), b = vload(xr + j + kW); m0 = a > m0 ? a : m0; " +
       "m1 = b > m1 ? b : m1; bad |= (a != a) | (b != b); }\n";
  s += ind + "for (; j + kW <= " + K + "; j += kW) { const vf a = vload(xr + j); m0 = a > m0 ? a : m0; bad |= a != a; }\n";
  s += ind + "m0 = m1 > m0 ? m1 : m0;\n";
  s += ind + "float acc = -__builtin_inff();\n" + ind + "bool nan = false;\n";
  s += ind + "for (int l = 0; l < kW; ++l) { acc = m0[l] > acc ? m0[l] : acc; nan = nan || bad[l] != 0; }\n";
  s += ind + "for (; j < " + K + "; ++j) { float v = xr[j]; if (v > acc || v != v) acc = acc != acc ? acc : v; }\n";
  return s + ind + "if (nan) acc = __builtin_nanf(\"\");\n";
}

std::string emit_square_sum_into(int axis, const View& x, const View& out, const EmitContext& ctx, bool into) {
  const Fold f = fold_over(axis, x, out);
  std::string at = element(x, f.x_strides, f.shape), step = std::to_string(f.step);
  return loop_nest(f.shape, ctx, [&](const std::string& ind) {
    std::string o = element(out, f.out_strides, f.shape), start = into ? o : "0.0f";
    if (f.step == 1 && f.k >= 16) return ind + "const auto* xr = &" + at + ";\n" + contiguous_fold(ind, f.k, true, start) + ind + o + " = acc;\n";
    return ind + "const auto* xr = &" + at + ";\n" + ind + "float acc = " + start + ";\n" + ind + "for (long j = 0; j < " + std::to_string(f.k) +
           "; ++j) { float v = xr[j * " + step + "L]; acc += v * v; }\n" + ind + o + " = acc;\n";
  });
}

// Loops over the result (x's shape with the axis at size 1), the reduced axis innermost: each
// result element folds x along the axis in order, as the interpreter does.
std::string emit_reduce(Op op, int axis, const View& x, const View& out, const EmitContext& ctx) {
  if (op != Op::Sum && op != Op::Max && op != Op::Rms)
    throw Error(Error::Kind::InvalidArgument, std::string("codegen: '") + op_name(op) + "' is not a reduction it can lower");
  const Fold f = fold_over(axis, x, out);
  const int64_t k = f.k;
  std::string at = element(x, f.x_strides, f.shape);
  std::string step = std::to_string(f.step);
  return loop_nest(f.shape, ctx, [&](const std::string& ind) {
    std::string s = ind + "const auto* xr = &" + at + ";\n";
    if (op == Op::Max && f.step == 1 && k >= 16) {
      s += contiguous_max(ind, k);
    } else if (op == Op::Max) {
      s += ind + "float acc = -__builtin_inff();\n";
      s += ind + "for (long j = 0; j < " + std::to_string(k) + "; ++j) {\n";
      s += ind + "  float v = xr[j * " + step + "L];\n";
      s += ind + "  if (v > acc || v != v) acc = acc != acc ? acc : v;\n";
      s += ind + "}\n";
    } else if (f.step == 1 && k >= 16) {
      s += contiguous_fold(ind, k, op == Op::Rms, "0.0f");
      if (op == Op::Rms) s += ind + "acc = __builtin_sqrtf(acc / float(" + std::to_string(k) + "));\n";
    } else {
      s += ind + "float acc = 0.0f;\n";
      s += ind + "for (long j = 0; j < " + std::to_string(k) + "; ++j) { float v = xr[j * " + step + "L]; acc += " +
           (op == Op::Rms ? "v * v" : "v") + "; }\n";
      if (op == Op::Rms) s += ind + "acc = __builtin_sqrtf(acc / float(" + std::to_string(k) + "));\n";
    }
    return s + ind + element(out, f.out_strides, f.shape) + " = acc;\n";
  });
}

}  // namespace prism::backend::cpu::detail
