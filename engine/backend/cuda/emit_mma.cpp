// Tensor cores through mma.sync m16n8k16 (emit_ops.h: emit_mma_matmul). Unlike the WMMA path,
// which loads whole fragments from aligned 16-bit tiles, each lane gathers its own fragment
// elements (the PTX ISA's layout, lane = 4 * group + q) from wherever they lie and rounds them to
// 16 bits in registers, so any operand can feed the tensor cores: attention's exp(Q Kt) computed
// in f32, a decode block's 4-row activation tile, a transposed or offset view.
#include "engine/backend/cuda/emit_ops.h"

#include <functional>

namespace prism::backend::cuda::detail {

namespace {

// "(row < rows && col < cols ? prism_f32(p[row * rs + col * cs]) : 0.0f)", the bounds tests left
// out where the tile sizes make them always true.
std::string read(const std::string& p, const std::string& row, int64_t rs, bool row_test, int64_t rows, const std::string& col, int64_t cs,
                 bool col_test, int64_t cols) {
  auto term = [](const std::string& i, int64_t stride) {
    const std::string index = i.find(' ') == std::string::npos ? i : "(" + i + ")";
    return stride == 1 ? index : index + " * " + std::to_string(stride);
  };
  std::string value = "prism_f32(" + p + "[" + term(row, rs) + " + " + term(col, cs) + "])";
  std::string test;
  if (row_test) test = row + " < " + std::to_string(rows);
  if (col_test) test += (test.empty() ? "" : " && ") + col + " < " + std::to_string(cols);
  return test.empty() ? value : "(" + test + " ? " + value + " : 0.0f)";
}

// The tiles of an mma.sync matmul spread over the block's warps: a warp a tile in turn, or with k
// split over `split` warps a tile, warp w takes tile w % tiles and slice w / tiles of k (warps past
// tiles * split only meet the barrier); the first slice stores its partial, and after the barrier
// the others add theirs (into an accumulator, `accumulate`: every slice adds its own, no barrier).
// `tile(at, from, step, compute)` is a tile's code at indentation `at`: its k loop from `from`
// every `step`, run where `compute` holds (a warp-uniform condition, "" for always);
// `store(at, how)` writes its accumulators (Write), adds them (Add) or adds them atomically
// (Atomic).
enum class Store { Write, Add, Atomic };
using TileCode = std::function<std::string(const std::string&, const std::string&, int64_t, const std::string&)>;
using StoreCode = std::function<std::string(const std::string&, Store)>;
std::string warps_over_tiles(const std::string& comment, int64_t tiles, int64_t split, bool accumulate, const EmitContext& ctx, const TileCode& tile,
                             const StoreCode& store) {
  const std::string ind = ctx.indent, in2 = ind + "  ", in3 = in2 + "  ";
  std::string s = ind + "// tensor cores: " + comment + (split > 1 ? ", k split over " + std::to_string(split) + " warps a tile" : "") +
                  (accumulate ? ", added into the accumulator" : "") + "\n" + ind + "{\n";
  s += in2 + "const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;\n";
  if (split == 1) {
    s += in2 + "for (int t = threadIdx.x >> 5; t < " + std::to_string(tiles) + "; t += " + std::to_string(ctx.threads / 32) + ") {\n";
    s += tile(in3, "0", 16, "") + store(in3, accumulate ? Store::Add : Store::Write) + in2 + "}\n";
    return s + ind + "}\n";
  }
  const std::string parts = std::to_string(split);
  s += in2 + "const int t = (threadIdx.x >> 5) % " + std::to_string(tiles) + ", part = (threadIdx.x >> 5) / " + std::to_string(tiles) + ";\n";
  s += tile(in2, "part * 16", 16 * split, "part < " + parts);
  if (accumulate) {
    s += in2 + "if (part < " + parts + ") {\n" + store(in3, Store::Atomic) + in2 + "}\n";
    return s + ind + "}\n";
  }
  s += in2 + "if (part == 0) {\n" + store(in3, Store::Write) + in2 + "}\n";
  s += in2 + "__syncthreads();\n";
  s += in2 + "if (part > 0 && part < " + parts + ") {\n" + store(in3, Store::Atomic) + in2 + "}\n";
  return s + ind + "}\n";
}

// The statement storing `value` at `place` as `how` says.
std::string stored(const std::string& place, const std::string& value, Store how) {
  switch (how) {
    case Store::Write: return "prism_put(&" + place + ", " + value + ");";
    case Store::Add: return "prism_put(&" + place + ", prism_f32(" + place + ") + " + value + ");";
    case Store::Atomic: return "atomicAdd(&" + place + ", " + value + ");";
  }
  return "";
}

}  // namespace

int64_t mma_k_split(int64_t tiles, int64_t k, int threads) {
  const int64_t warps = threads / 32, steps = (k + 15) / 16;
  int64_t split = 1;
  while (tiles * split * 2 <= warps && split * 2 <= steps) split *= 2;
  return split;
}

std::string emit_mma_matmul(const View& a, const View& b, const View& out, const char* type, const EmitContext& ctx, MatmulOut to) {
  const size_t ra = a.shape.size(), rb = b.shape.size(), ro = out.shape.size();
  if (ra < 2 || rb < 2 || ro < 2 || ctx.spread != Spread::Block) return "";
  const int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  if (b.shape[rb - 2] != k || out.shape[ro - 2] != m || out.shape[ro - 1] != n) return "";
  const std::vector<int64_t> batch(out.shape.begin(), out.shape.end() - 2);
  const std::vector<int64_t> sa = batch_strides(a, batch), sb = batch_strides(b, batch), so = batch_strides(out, batch);
  const int64_t tm = (m + 15) / 16, tn = (n + 7) / 8, tiles = element_count(batch) * tm * tn;
  const bool row_test = m % 16 != 0, col_test = n % 8 != 0, k_test = k % 16 != 0;
  const int64_t lda = a.strides[ra - 2], ka = a.strides[ra - 1], kb = b.strides[rb - 2], ldb = b.strides[rb - 1];
  const int64_t ldo = out.strides[ro - 2], co = out.strides[ro - 1];
  const std::string bf = std::string(type) == "__nv_bfloat16" ? "true" : "false";

  const int64_t split = to.f32_shared ? mma_k_split(tiles, k, ctx.threads) : 1;
  // One tile's work at indentation `at`: its coordinates, then its k loop (from `from`, every
  // `step`) into d, computed where `compute` holds (a warp-uniform condition, "" for always).
  auto tile = [&](const std::string& at, const std::string& from, int64_t step, const std::string& compute) {
    std::string code;
    if (element_count(batch) > 1) {
      code += at + "const int bi = t / " + std::to_string(tm * tn) + ";\n";
      code += coordinates(batch, "bi", "i", at, ctx);
    }
    code += at + "const int r0 = t / " + std::to_string(tn) + " % " + std::to_string(tm) + " * 16 + g, r1 = r0 + 8;\n";
    code += at + "const int c = t % " + std::to_string(tn) + " * 8 + g, oc = t % " + std::to_string(tn) + " * 8 + 2 * q;\n";
    code += at + "const auto* ap = &" + a.ptr + "[" + offset(sa, batch, "i", ctx) + "];\n";
    code += at + "const auto* bp = &" + b.ptr + "[" + offset(sb, batch, "i", ctx) + "];\n";
    code += at + "float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n";
    const std::string loop = compute.empty() ? at : at + "  ", body = loop + "  ";
    if (!compute.empty()) code += at + "if (" + compute + ") {\n";
    code += loop + "for (int kk = " + from + "; kk < " + std::to_string(k) + "; kk += " + std::to_string(step) + ") {\n";
    code += body + "const int k0 = kk + 2 * q, k1 = k0 + 8;\n";
    auto A = [&](const char* r, const std::string& kk) { return read("ap", r, lda, row_test, m, kk, ka, k_test, k); };
    auto B = [&](const std::string& kk) { return read("bp", kk, kb, k_test, k, "c", ldb, col_test, n); };
    auto pack = [&](const std::string& lo, const std::string& hi) { return "prism_pack16<" + bf + ">(" + lo + ", " + hi + ")"; };
    code += body + "prism_mma16816<" + bf + ">(d,\n";
    code += body + "    " + pack(A("r0", "k0"), A("r0", "k0 + 1")) + ",\n";
    code += body + "    " + pack(A("r1", "k0"), A("r1", "k0 + 1")) + ",\n";
    code += body + "    " + pack(A("r0", "k1"), A("r0", "k1 + 1")) + ",\n";
    code += body + "    " + pack(A("r1", "k1"), A("r1", "k1 + 1")) + ",\n";
    code += body + "    " + pack(B("k0"), B("k0 + 1")) + ",\n";
    code += body + "    " + pack(B("k1"), B("k1 + 1")) + ");\n";
    code += loop + "}\n";
    if (!compute.empty()) code += at + "}\n";
    return code;
  };
  // d[0], d[1]: row r0, columns oc and oc + 1; d[2], d[3]: row r1, written ("put") or added ("add").
  const std::string base = out.ptr + "[" + offset(so, batch, "i", ctx) + " + ";
  auto store = [&](const std::string& at, Store how) {
    std::string code;
    for (int half = 0; half < 2; ++half) {
      const std::string r = half ? "r1" : "r0";
      std::string body;
      for (int j = 0; j < 2; ++j) {
        const std::string col = j ? "oc + 1" : "oc", place = base + r + " * " + std::to_string(ldo) + " + (" + col + ") * " + std::to_string(co) + "]",
                          value = "d[" + std::to_string(2 * half + j) + "]";
        body += at + (row_test ? "  " : "") + (col_test ? "if (" + col + " < " + std::to_string(n) + ") " : "") + stored(place, value, how) + "\n";
      }
      code += row_test ? at + "if (" + r + " < " + std::to_string(m) + ") {\n" + body + at + "}\n" : body;
    }
    return code;
  };
  const std::string comment = std::string("mma.sync m16n8k16, operands rounded to ") + type + " in registers";
  return warps_over_tiles(comment, tiles, split, to.accumulate, ctx, tile, store);
}

bool ldmatrix_mma_fits(int64_t m, int64_t n, int64_t k) { return m >= 1 && m < 16 && n % 16 == 0 && k % 16 == 0; }

std::string emit_ldmatrix_mma(const View& a, const View& b, const View& out, const char* type, const EmitContext& ctx, bool a_staged,
                              MatmulOut to) {
  if (a.shape.size() != 2 || b.shape.size() != 2 || out.shape.size() != 2 || ctx.spread != Spread::Block) return "";
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (b.shape[0] != k || out.shape[0] != m || out.shape[1] != n || !ldmatrix_mma_fits(m, n, k)) return "";
  // ldmatrix reads rows of 8 elements, 16 aligned bytes each: b row-major (read transposed) or
  // column-major (a W^T tile staged as W lies: read as it is), a staged a row-major; rows dense
  // or padded (pad_tiles.h), 16-byte multiples apart.
  const View b_columns{b.ptr, {n, k}, {b.strides[1], b.strides[0]}, b.dtype};  // b as its columns lie
  const bool b_rows = row_pitch(b, 2) > 0;
  const int64_t ldb = b_rows ? row_pitch(b, 2) : row_pitch(b_columns, 2), lda = a_staged ? row_pitch(a, 2) : 0;
  if (ldb == 0 || (a_staged && lda == 0)) return "";
  const int64_t tn = n / 16, tm = (m + 7) / 8, tiles = tn * tm, ldo = out.strides[0], co = out.strides[1];
  const bool row_test = m % 8 != 0;
  const std::string bf = std::string(type) == "__nv_bfloat16" ? "true" : "false", K = std::to_string(k);
  const std::string LDB = std::to_string(ldb), LDA = std::to_string(lda);
  const int64_t split = to.f32_shared ? mma_k_split(tiles, k, ctx.threads) : 1;
  // The instruction's rows are 16 columns of b (its A fragment: b's rows read transposed), its 8
  // columns up to 8 rows of a (its B fragment: a's rows as they lie; rows past m read row m - 1,
  // whose products land in columns no store writes).
  auto tile = [&](const std::string& at, const std::string& from, int64_t step, const std::string& compute) {
    std::string code = at + "const int n0 = t % " + std::to_string(tn) + " * 16, m0 = t / " + std::to_string(tn) + " * 8;\n";
    if (b_rows) code += at + "const " + type + "* brow = &" + b.ptr + "[((lane & 7) + (lane >> 4) * 8) * " + LDB + " + n0 + (lane >> 3 & 1) * 8];\n";
    else code += at + "const " + type + "* brow = &" + b.ptr + "[(n0 + (lane & 7) + (lane >> 3 & 1) * 8) * " + LDB + " + (lane >> 4) * 8];\n";
    const std::string arow = row_test ? "(m0 + (lane & 7) < " + std::to_string(m) + " ? m0 + (lane & 7) : " + std::to_string(m - 1) + ")" : "(m0 + (lane & 7))";
    if (a_staged) code += at + "const " + type + "* arow = &" + a.ptr + "[" + arow + " * " + LDA + " + (lane >> 3 & 1) * 8];\n";
    else code += at + "const int ar = m0 + g;\n";
    code += at + "float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n";
    const std::string loop = compute.empty() ? at : at + "  ", body = loop + "  ";
    if (!compute.empty()) code += at + "if (" + compute + ") {\n";
    code += loop + "for (int kk = " + from + "; kk < " + K + "; kk += " + std::to_string(step) + ") {\n";
    code += body + "unsigned fa[4], fb[2];\n";
    code += body + (b_rows ? "prism_ldmatrix<4, true>(fa, brow + kk * " + LDB + ");\n" : std::string("prism_ldmatrix<4, false>(fa, brow + kk);\n"));
    if (a_staged) {
      code += body + "prism_ldmatrix<2, false>(fb, arow + kk);\n";
    } else {  // column g of the fragment is a's row m0 + g: its elements gathered and rounded
      auto A = [&](const std::string& kk) { return read(a.ptr, "ar", a.strides[0], row_test, m, kk, a.strides[1], false, k); };
      auto pack = [&](const std::string& kk) { return "prism_pack16<" + bf + ">(" + A(kk) + ", " + A(kk + " + 1") + ")"; };
      code += body + "fb[0] = " + pack("kk + 2 * q") + ";\n";
      code += body + "fb[1] = " + pack("kk + 2 * q + 8") + ";\n";
    }
    code += body + "prism_mma16816<" + bf + ">(d, fa[0], fa[1], fa[2], fa[3], fb[0], fb[1]);\n";
    code += loop + "}\n";
    if (!compute.empty()) code += at + "}\n";
    return code;
  };
  // d[0], d[1]: column n0 + g of rows m0 + 2q and m0 + 2q + 1; d[2], d[3]: column n0 + g + 8.
  auto store = [&](const std::string& at, Store how) {
    std::string code;
    for (int r = 0; r < 2; ++r) {
      const std::string row = r ? "m0 + 2 * q + 1" : "m0 + 2 * q";
      for (int c = 0; c < 2; ++c) {
        const std::string place = out.ptr + "[(" + row + ") * " + std::to_string(ldo) + " + (n0 + g" + (c ? " + 8" : "") + ") * " + std::to_string(co) + "]",
                          value = "d[" + std::to_string(2 * c + r) + "]";
        code += at + (row_test ? "if (" + row + " < " + std::to_string(m) + ") " : "") + stored(place, value, how) + "\n";
      }
    }
    return code;
  };
  const std::string comment = std::string("mma.sync m16n8k16 through ldmatrix, ") + type + ", b's columns as the instruction's rows" +
                              (a_staged ? "" : ", a's rows rounded in registers");
  return warps_over_tiles(comment, tiles, split, to.accumulate, ctx, tile, store);
}

}  // namespace prism::backend::cuda::detail
