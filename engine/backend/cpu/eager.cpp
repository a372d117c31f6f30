#include "engine/backend/cpu/eager.h"

#include <filesystem>
#include <sstream>

#include "engine/backend/c_expr.h"
#include "engine/backend/cpu/kernel_sources.h"
#include "engine/backend/cpu/parallel_grain.h"
#include "engine/backend/cpu/storage_types.h"
#include "engine/backend/cpu/vector_math.h"
#include "engine/backend/eager_plan.h"
#include "engine/backend/view.h"
#include "engine/error.h"
#include "engine/ir/shape.h"

namespace prism::backend::cpu {

namespace {

std::string lit(int64_t v) { return std::to_string(v) + "LL"; }

const eager::FoldDialect kFold{"std::isnan", "std::sqrt", "-std::numeric_limits<float>::infinity()"};

constexpr const char* kPrologue = embedded::eager_prologue_h;

std::string buffer(int b) { return std::string("b").append(std::to_string(b)); }

// The element an access reads or writes at the loop indices i0, i1 …: "b3[12LL + i0*4LL]"; a
// constant's literal.
std::string element(const eager::Access& a) {
  if (a.buffer < 0)
    return eager::float_literal(a.constant, "std::numeric_limits<float>::quiet_NaN()", "std::numeric_limits<float>::infinity()");
  const std::string index = index_offset(a.strides, "LL");
  return buffer(a.buffer) + "[" + (a.offset ? lit(a.offset) + " + " + index : index) + "]";
}

// Prints the plan's steps as the body of prism_entry.
class Printer {
 public:
  explicit Printer(const eager::Plan& plan) : plan_(plan) {}

  std::string run() {
    for (const eager::Step& s : plan_.steps) {
      line("// " + s.value + " = " + s.what);
      if (s.kind == eager::Step::Kind::Gather) gather(s);
      else if (s.kind == eager::Step::Kind::Matmul) matmul(s);
      else reduce(s);
    }
    std::ostringstream out;
    out << kPrologue << kVectorMath << kStorageTypes << elementwise_functions(kHostC) << "\n";
    out << "extern \"C\" int prism_entry(const void* const* inputs, void* const* outputs, int threads) {\n";
    out << "  try {\n";
    out << "    const int nt = threads < 1 ? 1 : threads;\n";
    out << "    static std::vector<std::vector<float>> buf;  // intermediates, allocated on the first call\n";
    out << "    if (buf.empty()) {\n";
    std::vector<int64_t> scratch;  // in floats: a 16-bit intermediate takes half as many
    for (const eager::Buffer& b : plan_.buffers)
      if (b.role == eager::Buffer::Role::Scratch) scratch.push_back((b.elements * dtype_bytes(b.dtype) + 3) / 4);
    out << "      buf.resize(" << scratch.size() << ");\n";
    for (size_t i = 0; i < scratch.size(); ++i) out << "      buf[" << i << "].resize(" << scratch[i] << ");\n";
    out << "    }\n";
    out << "    openblas_set_num_threads(nt);\n";
    for (size_t i = 0; i < plan_.buffers.size(); ++i) {
      const eager::Buffer& b = plan_.buffers[i];
      const std::string slot = std::to_string(b.slot), comment = ";  // " + b.name + "\n";
      const std::string type = storage_type_name(b.dtype);
      if (b.role == eager::Buffer::Role::Input)
        out << "    const " << type << "* " << buffer(int(i)) << " = static_cast<const " << type << "*>(inputs[" << slot << "])" << comment;
      else if (b.role == eager::Buffer::Role::Output)
        out << "    " << type << "* " << buffer(int(i)) << " = static_cast<" << type << "*>(outputs[" << slot << "])" << comment;
      else out << "    " << type << "* " << buffer(int(i)) << " = reinterpret_cast<" << type << "*>(buf[" << slot << "].data())" << comment;
    }
    out << body_.str();
    out << "    return 0;\n";
    out << "  } catch (const std::exception& e) {\n    g_error = e.what();\n    return 1;\n  }\n}\n";
    return out.str();
  }

 private:
  void line(const std::string& s) { body_ << "    " << s << "\n"; }

  // A parallel loop nest over `shape` (indices i0, i1, …): the outer dims collapsed and split over
  // the threads, the innermost left to the vectorizer. `stmt` uses the indices.
  void loop_nest(const std::vector<int64_t>& shape, const std::string& stmt) {
    if (shape.empty()) return line("{ " + stmt + " }");
    // Below the grain the op runs on the calling thread, as PyTorch's (parallel_grain.h).
    const bool parallel = above_grain(double(element_count(shape)), true);
    if (shape.size() > 1 && parallel)
      line("#pragma omp parallel for collapse(" + std::to_string(shape.size() - 1) + ") num_threads(nt) schedule(static)");
    else if (shape.size() == 1)  // one loop: split (above the grain), and vectorized
      line(parallel ? "#pragma omp parallel for simd num_threads(nt) schedule(static)" : "#pragma omp simd");
    std::string indent;
    for (size_t d = 0; d < shape.size(); ++d) {
      std::string i = std::string("i").append(std::to_string(d));
      // Each element is read and written at its own index (or a broadcast one): no dependence
      // across iterations, so the vectorizer may call libmvec's exp and log as PyTorch's do. In
      // braces: nothing may stand between the loops OpenMP collapses and the body they run.
      if (d + 1 == shape.size() && d > 0) line(indent + "{");
      if (d + 1 == shape.size() && d > 0) line(indent + "#pragma GCC ivdep");
      line(indent + "for (i64 " + i + " = 0; " + i + " < " + lit(shape[d]) + "; ++" + i + ")");
      indent += "  ";
    }
    line(indent + "{ " + stmt + " }");
    if (shape.size() > 1) line(indent.substr(2) + "}");
  }

  void gather(const eager::Step& s) {
    if (staged_gather(s)) return;
    if (!s.elementwise) return loop_nest(s.shape, element(s.out) + " = " + element(s.in.at(0)) + ";");
    const bool binary = s.in.size() == 2;
    loop_nest(s.shape, operands(s, {element(s.in[0]), binary ? element(s.in[1]) : ""}) + element(s.out) + " = " + expression(s) + ";");
  }

  std::string expression(const eager::Step& s) const {
    if (!s.elementwise) return "a";
    return elementwise_expr(s.op, s.in.size() == 2 ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"a"}, kHostC, "eager");
  }
  static std::string operands(const eager::Step& s, const std::vector<std::string>& at) {
    return "const float a = " + at[0] + (s.in.size() == 2 ? ", b = " + at[1] : "") + "; ";
  }

  bool contiguous_f16(const eager::Access& a) const {
    return a.buffer >= 0 && plan_.buffers.at(size_t(a.buffer)).dtype == DType::F16 && !a.strides.empty() && a.strides.back() == 1;
  }

  // The innermost loop of a gather through f32 chunks where an operand is a contiguous f16 row:
  // widened and rounded 8 lanes an instruction (prism_widen_f16, prism_narrow_f16), not element by
  // element as an eager framework's kernels convert f16 (docs/tuning.md, "The CPU's other kernel
  // choices"). The outer loops stay one collapsed parallel loop. False where it does not
  // apply: one loop, an innermost loop shorter than 16, no such operand.
  bool staged_gather(const eager::Step& s) {
    const size_t r = s.shape.size();
    if (r < 2 || s.shape.back() < 16) return false;
    bool any = contiguous_f16(s.out);
    for (const eager::Access& a : s.in) any = any || contiguous_f16(a);
    if (!any) return false;
    const std::string i = std::string("i").append(std::to_string(r - 1)), N = lit(s.shape.back()), K = "128";
    auto start = [&](const eager::Access& a) { return "({ const i64 " + i + " = c; &" + element(a) + "; })"; };
    std::string body = "for (i64 c = 0; c < " + N + "; c += " + K + ") { const i64 n = " + N + " - c < " + K + " ? " + N + " - c : " + K + "; ";
    std::vector<std::string> at;
    for (size_t k = 0; k < s.in.size(); ++k) {
      if (!contiguous_f16(s.in[k])) {
        at.push_back(element(s.in[k]));
        continue;
      }
      const std::string w = std::string("w").append(std::to_string(k));  // append: GCC 12's -Wrestrict misfires on "w" + s
      body += "float " + w + "[" + K + "]; prism_widen_f16(" + start(s.in[k]) + ", " + w + ", n); ";
      at.push_back(w + "[" + i + " - c]");
    }
    at.resize(2);
    const bool narrow = contiguous_f16(s.out);
    if (narrow) body += "float wo[" + K + "]; ";
    body += "\n#pragma GCC ivdep\n    for (i64 " + i + " = c; " + i + " < c + n; ++" + i + ") { " + operands(s, at) +
            (narrow ? "wo[" + i + " - c]" : element(s.out)) + " = " + expression(s) + "; }\n    ";
    if (narrow) body += "prism_narrow_f16(wo, " + start(s.out) + ", n); ";
    // The outer loops: one parallel loop (collapsed) above the grain, as loop_nest's.
    if (above_grain(double(element_count(s.shape)), true))
      line("#pragma omp parallel for collapse(" + std::to_string(r - 1) + ") num_threads(nt) schedule(static)");
    std::string indent;
    for (size_t d = 0; d + 1 < r; ++d) {
      const std::string o = std::string("i").append(std::to_string(d));
      line(indent + "for (i64 " + o + " = 0; " + o + " < " + lit(s.shape[d]) + "; ++" + o + ")");
      indent += "  ";
    }
    line(indent + "{ " + body + "} }");
    return true;
  }

  // One cblas_sgemm per element of the broadcast batch, in order (OpenBLAS threads each call).
  // 16-bit operands are widened to f32 copies first and a 16-bit result rounded from an f32 one
  // (Debian's OpenBLAS has no bf16 GEMM): what an eager framework does without one.
  void matmul(const eager::Step& s) {
    line("{");
    std::vector<std::string> names;  // what sgemm reads and writes: the buffers, or their f32 copies
    // `to` = `from` over `elements` (pointers): a 16-bit operand widened to its f32 copy, or a 16-bit
    // result rounded from its f32 copy; f16 in rows of 4096 by prism_widen_f16 / prism_narrow_f16
    // (8 lanes an instruction, as an eager framework converts), bf16 element by element (a shift).
    auto copy = [&](const std::string& to, const std::string& from, int64_t elements, DType dtype, bool widen) {
      const std::string E = lit(elements);
      const bool parallel = above_grain(double(elements), true);  // parallel_grain.h
      if (dtype == DType::F16) {
        line(std::string(parallel ? "  #pragma omp parallel for num_threads(nt) schedule(static)\n" : "") + "    for (i64 c = 0; c < " + E + "; c += 4096) " +
             (widen ? "prism_widen_f16(" : "prism_narrow_f16(") + from + " + c, " + to + " + c, " + E + " - c < 4096 ? " + E + " - c : 4096);");
        return;
      }
      line(std::string(parallel ? "  #pragma omp parallel for simd num_threads(nt) schedule(static)\n" : "  #pragma omp simd\n") + "    for (i64 e = 0; e < " + E + "; ++e) " + to + "[e] = " + from + "[e];");
    };
    for (const eager::Access* a : {&s.in.at(0), &s.in.at(1), &s.out}) {
      const eager::Buffer& b = plan_.buffers.at(size_t(a->buffer));
      names.push_back(buffer(a->buffer));
      if (b.dtype == DType::F32) continue;
      // Appended piece by piece: GCC 12 misreports `"w" + std::string` under -Wrestrict (PR 105329).
      std::string wide = "w";
      wide.append(std::to_string(names.size() - 1));
      line("  static std::vector<float> " + wide + "(" + lit(b.elements) + ");  // " + b.name + " in f32");
      if (a != &s.out) copy(wide + ".data()", names.back(), b.elements, b.dtype, true);
      names.back() = wide + ".data()";
    }
    matmul_calls(s, names);
    const eager::Buffer& out = plan_.buffers.at(size_t(s.out.buffer));
    if (out.dtype != DType::F32) copy(buffer(s.out.buffer), "w2.data()", out.elements, out.dtype, false);  // a 16-bit result, rounded from its f32 copy
    line("}");
  }

  void matmul_calls(const eager::Step& s, const std::vector<std::string>& names) {
    std::string indent = "  ";
    for (size_t d = 0; d < s.shape.size(); ++d) {
      std::string i = std::string("i").append(std::to_string(d));
      line(indent + "for (i64 " + i + " = 0; " + i + " < " + lit(s.shape[d]) + "; ++" + i + ")");
      indent += "  ";
    }
    auto at = [&](const eager::Access& a) {
      const size_t k = &a == &s.in[0] ? 0 : &a == &s.in[1] ? 1 : 2;
      return names[k] + " + (" + (a.offset ? lit(a.offset) + " + " : "") + index_offset(a.strides, "LL") + ")";
    };
    // 112 = CblasTrans: an operand stored transposed has its leading dim swapped too.
    line(indent + "cblas_sgemm(101, " + (s.trans_a ? "112" : "111") + ", " + (s.trans_b ? "112" : "111") + ", " + std::to_string(s.m) + ", " +
         std::to_string(s.n) + ", " + std::to_string(s.k) + ", 1.0f, " + at(s.in[0]) + ", " + std::to_string(s.trans_a ? s.m : s.k) + ", " +
         at(s.in[1]) + ", " + std::to_string(s.trans_b ? s.k : s.n) + ", 0.0f, " + at(s.out) + ", " + std::to_string(s.n) + ");");
  }

  // Each output element accumulated in f32 in axis order, as the interpreter does.
  void reduce(const eager::Step& s) {
    const eager::FoldText f = eager::fold_text(s.op, s.k, kFold);
    const std::string x = buffer(s.in.at(0).buffer), out = buffer(s.out.buffer);
    loop_nest({s.outer, s.inner}, "float acc = " + f.init + "; for (i64 j = 0; j < " + lit(s.k) + "; ++j) { const float x = " + x +
                                      "[(i0 * " + lit(s.k) + " + j) * " + lit(s.inner) + " + i1]; " + f.update + " } " + out + "[i0 * " +
                                      lit(s.inner) + " + i1] = " + f.result + ";");
  }

  const eager::Plan& plan_;
  std::ostringstream body_;
};

}  // namespace

std::string generate_eager_source(const Program& lowered, const DimBindings& bindings) {
  return Printer(eager::plan(lowered, bindings)).run();
}

std::string eager_note(const Program& lowered) {
  for (const Value& v : lowered.values) {
    if (v.op != Op::Matmul) continue;
    bool narrow = v.type.dtype != DType::F32;
    for (int operand : v.operands) narrow = narrow || lowered.value(operand).type.dtype != DType::F32;
    if (narrow) return "16-bit matmul operands are widened to f32 copies for OpenBLAS sgemm (this OpenBLAS has no bf16 GEMM)";
  }
  return "";
}

const std::vector<std::string>& eager_libs() {
  static const std::vector<std::string> libs = [] {
    const std::string openmp = "/usr/lib/x86_64-linux-gnu/openblas-openmp";
    if (std::filesystem::exists(openmp + "/libopenblas.so.0"))
      return std::vector<std::string>{"-L" + openmp, "-Wl,-rpath," + openmp, "-l:libopenblas.so.0", "-Wl,-z,nodelete"};
    return std::vector<std::string>{"-lopenblas", "-Wl,-z,nodelete"};
  }();
  return libs;
}

}  // namespace prism::backend::cpu
