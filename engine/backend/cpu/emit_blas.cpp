// A library matmul through OpenBLAS's cblas_sgemm: the vendor kernel a candidate may put beside
// its fused kernels (docs/search.md, "Library kernels"), the same one the eager baseline calls.
#include <string>

#include "engine/backend/cpu/emit_ops.h"

namespace prism::backend::cpu::detail {

namespace {

// How BLAS reads a 2-D operand of `rows` x `cols` with these strides: rows contiguous (no
// transpose, leading dim = the row stride) or columns contiguous (transposed). Empty: neither.
struct Layout {
  bool ok = false, transposed = false;
  int64_t lead = 0;
};

Layout layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if (col_stride == 1 && (rows == 1 || row_stride >= cols)) return {true, false, rows == 1 ? cols : row_stride};
  if (row_stride == 1 && (cols == 1 || col_stride >= rows)) return {true, true, cols == 1 ? rows : col_stride};
  return {};
}

std::string lit(int64_t v) { return std::to_string(v) + "L"; }

}  // namespace

std::string emit_vendor_matmul(const View& a, const View& b, const View& out, const EmitContext& ctx) {
  // sgemm takes f32: 16-bit operands or results go to prism's micro-kernel, which widens as it loads.
  if (a.dtype != DType::F32 || b.dtype != DType::F32 || out.dtype != DType::F32) return "";
  const size_t r = out.shape.size();
  if (r < 2 || a.shape.size() < 2 || b.shape.size() < 2) return "";
  const int64_t m = out.shape[r - 2], n = out.shape[r - 1], k = a.shape.back();
  auto at = [](const View& v, size_t from_end) { return v.strides[v.strides.size() - from_end]; };
  const Layout la = layout(m, k, at(a, 2), at(a, 1)), lb = layout(k, n, at(b, 2), at(b, 1));
  if (!la.ok || !lb.ok || at(out, 1) != 1 || (m > 1 && at(out, 2) < n)) return "";
  // One call per element of the broadcast batch (OpenBLAS threads each call).
  const std::vector<int64_t> batch(out.shape.begin(), out.shape.end() - 2);
  const std::vector<int64_t> sa = aligned_strides(a, out.shape), sb = aligned_strides(b, out.shape), so = aligned_strides(out, out.shape);
  std::string s = ctx.indent + "openblas_set_num_threads(threads);\n", indent = ctx.indent;
  std::string oa, ob, oo;
  for (size_t d = 0; d < batch.size(); ++d) {
    const std::string i = std::string("i").append(std::to_string(d));
    s.append(indent)
        .append("for (long ")
        .append(i)
        .append(" = 0; ")
        .append(i)
        .append(" < ")
        .append(lit(batch[d]))
        .append("; ++")
        .append(i)
        .append(")\n");
    indent += "  ";
    oa.append(" + ").append(i).append(" * ").append(lit(sa[d]));
    ob.append(" + ").append(i).append(" * ").append(lit(sb[d]));
    oo.append(" + ").append(i).append(" * ").append(lit(so[d]));
  }
  // 101 row-major, 111 no transpose, 112 transpose (cblas.h's enums).
  s += indent + "cblas_sgemm(101, " + (la.transposed ? "112" : "111") + ", " + (lb.transposed ? "112" : "111") + ", " + std::to_string(m) +
       ", " + std::to_string(n) + ", " + std::to_string(k) + ", 1.0f, " + a.ptr + oa + ", " + std::to_string(la.lead) + ", " + b.ptr + ob +
       ", " + std::to_string(lb.lead) + ", 0.0f, " + out.ptr + oo + ", " + std::to_string(m > 1 ? at(out, 2) : n) + ");\n";
  return s;
}

}  // namespace prism::backend::cpu::detail
