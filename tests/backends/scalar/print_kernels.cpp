// The scalar backend's printer of the kernel IR (engine/backend/kernel_ir.h): every statement a
// plain loop nest over its result, every block of a grid in turn on the one thread.
#include <algorithm>
#include <map>

#include "engine/backend/c_expr.h"
#include "engine/backend/eager_plan.h"
#include "engine/backend/lower.h"
#include "engine/backend/statement_walk.h"
#include "engine/backend/view.h"
#include "engine/error.h"
#include "tests/backends/scalar/printing.h"

namespace prism::embedded {
extern const char scalar_runtime_h[];
}

namespace prism::test::scalar {

using backend::View;

const char* runtime() { return embedded::scalar_runtime_h; }
namespace kir = backend::kir;

const char* type_name(DType dtype) {
  switch (dtype) {
    case DType::F16: return "prism_f16";
    case DType::BF16: return "prism_bf16";
    case DType::F32: break;
  }
  return "float";
}

std::string loop_nest(const std::vector<int64_t>& shape, const std::string& indent, const std::string& body) {
  std::string s, ind = indent;
  for (size_t d = 0; d < shape.size(); ++d) {
    const std::string i = "i" + std::to_string(d);
    s += ind + "for (i64 " + i + " = 0; " + i + " < " + std::to_string(shape[d]) + "LL; ++" + i + ")\n";
    ind += "  ";
  }
  return s + ind + "{ " + body + " }\n";
}

namespace {

// v's element at the indices i0, i1 … of a loop nest over `loops` (a dim of 1 reads index 0).
std::string at(const View& v, std::vector<int64_t> strides, const std::vector<int64_t>& loops) {
  for (size_t d = 0; d < strides.size(); ++d)
    if (loops[d] == 1) strides[d] = 0;
  return v.ptr + "[" + backend::index_offset(strides, "LL") + "]";
}

// One thread's printer (statement_walk.h calls the members that print each kind of statement).
class KernelPrinter {
 public:
  template <class P, class C>
  friend std::string prism::backend::walk_statement(P& p, const kir::Stmt& s, const C& ctx, const std::string& f);

  explicit KernelPrinter(const kir::Program& p) : p_(p) {}

  View view(const kir::Place& place, const std::string& f) const {
    if (place.kind != kir::Place::Kind::Tensor) {
      const auto dtype = value_dtypes_.find(place.value);
      return backend::shifted(View{"v" + std::to_string(place.value), place.shape, place.strides,
                                   dtype == value_dtypes_.end() ? DType::F32 : dtype->second},
                              place.start);
    }
    const std::string t = "t" + std::to_string(p_.index(place.tensor)), off = backend::offset_text(place.offset, f, "LL");
    return backend::shifted(View{off == "0" ? t : "(" + t + " + " + off + ")", place.shape, place.strides, p_.tensor(place.tensor).dtype},
                            place.start);
  }

  // out = expr(xs…) element by element over out's shape, the operands broadcast to it.
  template <class Expr>
  static std::string zip(const std::vector<View>& xs, const View& out, const std::string& ind, Expr expr) {
    std::vector<std::string> read;
    for (const View& x : xs) read.push_back("prism_wide(" + at(x, backend::aligned_strides(x, out.shape), out.shape) + ")");
    return loop_nest(out.shape, ind, "prism_put(" + at(out, backend::aligned_strides(out, out.shape), out.shape) + ", " + expr(read) + ");");
  }
  static std::string copy(const View& x, const View& out, const std::string& ind) {
    return zip({x}, out, ind, [](const std::vector<std::string>& a) { return a[0]; });
  }

  std::string stage(const kir::Stmt&, const View& x, const View& out, const std::string& ind) const { return copy(x, out, ind); }
  std::string save(const View& x, const View& out, const std::string& ind) const { return copy(x, out, ind); }
  [[noreturn]] std::string bound() const { throw Error(Error::Kind::InvalidArgument, "scalar: a bound load is no statement"); }
  std::string unary(const kir::Stmt& s, const View& x, const View& out, const std::string& ind) const {
    return zip({x}, out, ind, [&](const std::vector<std::string>& a) { return backend::elementwise_expr(s.op, a, backend::kHostC, "scalar"); });
  }
  std::string binary(const kir::Stmt& s, const View& a, const View& b, const View& out, const std::string& ind) const {
    return zip({a, b}, out, ind, [&](const std::vector<std::string>& x) {
      return s.finite_shift ? x[0] + " - prism_shift_of(" + x[1] + ")" : backend::elementwise_expr(s.op, x, backend::kHostC, "scalar");
    });
  }
  // out[..., m, n] (+)= Σ_k a[..., m, k] * b[..., k, n], the batch dims broadcast: a loop nest
  // over (batch…, m, n) around one over k.
  std::string matmul(const kir::Stmt& s, const View& a, const View& b, const View& out, const std::string& ind) const {
    const size_t r = out.shape.size();
    std::vector<int64_t> loops = out.shape;
    loops.push_back(a.shape.back());
    // v's strides over the loops: its batch dims aligned to out's, then for m, n and k which of
    // v's last two dims each one walks (0 or 1; -1: none).
    auto strides_of = [&](const View& v, int m, int n, int k) {
      const std::vector<int64_t> batch(out.shape.begin(), out.shape.end() - 2);
      const View batch_only{v.ptr, {v.shape.begin(), v.shape.end() - 2}, {v.strides.begin(), v.strides.end() - 2}, v.dtype};
      std::vector<int64_t> st = backend::aligned_strides(batch_only, batch);
      const size_t q = v.shape.size();
      for (int which : {m, n, k}) st.push_back(which < 0 ? 0 : v.strides[q - 2 + size_t(which)]);
      return st;
    };
    std::vector<int64_t> so = backend::aligned_strides(out, out.shape);
    so.push_back(0);
    const std::string k = "i" + std::to_string(r), o = at(out, so, loops);
    const std::string sum = "float acc = 0.0f; for (i64 " + k + " = 0; " + k + " < " + std::to_string(loops[r]) + "LL; ++" + k +
                            ") acc += prism_wide(" + at(a, strides_of(a, 0, -1, 1), loops) + ") * prism_wide(" +
                            at(b, strides_of(b, -1, 1, 0), loops) + "); ";
    loops[r] = 1;  // its loop is the sum's own
    return loop_nest(loops, ind, sum + "prism_put(" + o + ", " + (s.into_accumulator ? "prism_wide(" + o + ") + acc" : "acc") + ");");
  }
  std::string constant(const kir::Stmt& s, const View& out, const std::string& ind) const {
    return ind + "prism_put(" + out.ptr + "[0], " + backend::float_literal(s.constant) + ");\n";
  }
  std::string concat(const kir::Stmt& s, const std::vector<View>& ins, const View& out, const std::string& ind) const {
    std::string code;
    for (const auto& [from, to] : backend::concat_moves(s.axis, ins, out)) code += copy(from, to, ind);
    return code;
  }
  // Each result folds x along the axis in order, as the interpreter does: from the op's start, or
  // (`into`) from the result's value, left unfinished (an rms accumulator's sum of squares).
  static std::string fold(Op op, int axis, const View& x, const View& out, const std::string& ind, bool into) {
    if (op != Op::Sum && op != Op::Max && op != Op::Rms)
      throw Error(Error::Kind::InvalidArgument, std::string("scalar: '") + op_name(op) + "' is no reduction it prints");
    const backend::Fold f = backend::fold_over(axis, x, out);
    const backend::eager::FoldText t = backend::eager::fold_text(op, f.k, {"std::isnan", "std::sqrt", "INFINITY"});
    const std::string o = at(out, f.out_strides, f.shape);
    std::string body = "float acc = " + (into ? "prism_wide(" + o + ")" : t.init) + "; for (i64 j = 0; j < " + std::to_string(f.k) +
                       "LL; ++j) { const float x = prism_wide((&" + at(x, f.x_strides, f.shape) + ")[j * " + std::to_string(f.step) + "LL]); " +
                       t.update + " } prism_put(" + o + ", " + (into ? "acc" : t.result) + ");";
    return loop_nest(f.shape, ind, body);
  }
  std::string reduce(const kir::Stmt& s, const View& x, const View& out, const std::string& ind) const {
    return fold(s.op, s.axis, x, out, ind, false);
  }
  std::string accumulate_sum(const View& x, const View& out, const std::string& ind) const {
    return zip({out, x}, out, ind, [](const std::vector<std::string>& a) { return a[0] + " + " + a[1]; });
  }
  std::string accumulate_max(const View& x, const View& out, const std::string& ind) const {
    return zip({out, x}, out, ind, [](const std::vector<std::string>& a) { return "prism_keep_max(" + a[0] + ", " + a[1] + ")"; });
  }
  std::string accumulate_rms(const kir::Stmt& s, const View& x, const View& out, const std::string& ind) const {
    return fold(Op::Rms, s.axis, x, out, ind, true);
  }
  static std::string rescaled(const View& x, const View& m, const View& run, const View& keep, const View& take, const View& out,
                              const std::string& ind) {
    auto factor = [](const std::vector<std::string>& a) { return "prism_factor(" + a[0] + ", " + a[1] + ")"; };
    return zip({run, m}, keep, ind, factor) + zip({m, run}, take, ind, factor) +
           zip({run, m}, run, ind, [](const std::vector<std::string>& a) { return "prism_keep_max(" + a[0] + ", " + a[1] + ")"; }) +
           zip({out, x, keep, take}, out, ind, [](const std::vector<std::string>& a) { return a[0] + " * " + a[2] + " + " + a[1] + " * " + a[3]; });
  }

  std::string phase(const std::vector<kir::Stmt>& stmts, const std::string& f) const {
    std::string s;
    for (const kir::Stmt& st : stmts) {
      if (st.kind == kir::Stmt::Kind::Bind) {
        s += "    const " + std::string(type_name(p_.tensor(st.out.tensor).dtype)) + "* const v" + std::to_string(st.value) + " = " +
             view(st.out, f).ptr + ";  // " + st.label + "\n";
        continue;
      }
      s += "    // " + st.label + "\n" + backend::walk_statement(*this, st, std::string("    "), f);
    }
    return s;
  }

  std::string tensors(const kir::Kernel& k) const {
    std::string s;
    for (size_t t : kir::kernel_tensors(p_, k)) {
      const std::string ty = type_name(p_.tensors[t].dtype);
      s += "  " + ty + "* const t" + std::to_string(t) + " = static_cast<" + ty + "*>(T[" + std::to_string(t) + "]);\n";
    }
    return s;
  }

  std::string custom(const std::string& fn, const kir::Kernel& kernel) {
    const kir::CustomKernel& k = kernel.block;
    value_dtypes_ = kir::block_value_dtypes(p_, k);
    std::string s = "static void " + fn + "() {\n" + tensors(kernel);
    s += "  static std::vector<float> scratch(" + std::to_string(std::max<int64_t>(1, k.fast_memory_bytes / 4)) + ");\n";
    s += "  float* const S = scratch.data();\n";
    s += "  for (i64 blk = 0; blk < " + std::to_string(k.blocks()) + "LL; ++blk) {\n";
    int64_t inner = 1;
    for (size_t g = k.grid.size(); g-- > 0;) {
      s += "    const i64 b" + std::to_string(g) + " = blk / " + std::to_string(inner) + "LL % " + std::to_string(k.grid[g]) + "LL;\n";
      inner *= k.grid[g];
    }
    for (const kir::Tile& t : k.tiles)
      s += "    " + std::string(type_name(t.storage)) + "* const v" + std::to_string(t.value) + " = reinterpret_cast<" + type_name(t.storage) +
           "*>(S + " + std::to_string(t.offset_bytes / 4) + ");\n";
    for (const kir::Accumulator& a : k.accumulators)
      s += "    for (i64 e = 0; e < " + std::to_string(a.elements) + "LL; ++e) v" + std::to_string(a.value) + "[e] = " +
           (a.acc == sgraph::AccKind::Max ? "-INFINITY" : "0.0f") + ";\n";
    s += phase(k.before, "0");
    s += "    for (i64 f = 0; f < " + std::to_string(k.loop) + "LL; ++f) {\n" + phase(k.body, "f") + "    }\n";
    for (const kir::Accumulator& a : k.accumulators)
      if (a.acc == sgraph::AccKind::Rms)
        s += "    for (i64 e = 0; e < " + std::to_string(a.elements) + "LL; ++e) v" + std::to_string(a.value) + "[e] = std::sqrt(v" +
             std::to_string(a.value) + "[e] / " + std::to_string(a.count) + ".0f);\n";
    return s + phase(k.after, "0") + "  }\n}\n";
  }

  std::string library(const std::string& fn, const kir::Kernel& kernel) {
    value_dtypes_.clear();
    return "static void " + fn + "() {\n" + tensors(kernel) + backend::walk_statement(*this, kernel.library, std::string("  "), "0") + "}\n";
  }

 private:
  const kir::Program& p_;
  std::map<int, DType> value_dtypes_;  // of the kernel being printed
};

}  // namespace

std::string kernels_source(const kir::Program& program) {
  KernelPrinter printer(program);
  std::string s = std::string(runtime()) + backend::elementwise_functions(backend::kHostC);
  s += "\nstatic void* T[" + std::to_string(std::max<size_t>(1, program.tensors.size())) + "];  // the device tensors\n\n";
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const std::string fn = "kernel_" + std::to_string(k);
    s += (program.kernels[k].custom ? printer.custom(fn, program.kernels[k]) : printer.library(fn, program.kernels[k])) + "\n";
  }
  std::vector<Slot> slots;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const kir::Tensor& t = program.tensors[i];
    const auto returned = std::find(program.outputs.begin(), program.outputs.end(), t.name);
    const int output = returned == program.outputs.end() ? -1 : int(returned - program.outputs.begin());
    slots.push_back({t.name, t.bytes(), i < program.inputs ? int(i) : -1, output});
  }
  std::vector<std::pair<size_t, size_t>> copies;  // (output, tensor): an input returned, or a tensor returned twice
  for (size_t o = 0; o < program.outputs.size(); ++o) {
    const size_t i = program.index(program.outputs[o]);
    if (i < program.inputs || size_t(slots[i].output) != o) copies.emplace_back(o, i);
  }
  std::string calls;
  for (size_t k = 0; k < program.kernels.size(); ++k) calls += "  kernel_" + std::to_string(k) + "();\n";
  return s + entry_source(slots, calls, copies);
}

std::string entry_source(const std::vector<Slot>& slots, const std::string& calls, const std::vector<std::pair<size_t, size_t>>& copies) {
  std::string s = "extern \"C\" int prism_entry(const void* const* inputs, void* const* outputs, int threads) {\n  (void)threads;\n";
  for (size_t i = 0; i < slots.size(); ++i) {
    const std::string ti = "  T[" + std::to_string(i) + "] = ", comment = ";  // " + slots[i].name + "\n";
    if (slots[i].input >= 0) s += ti + "const_cast<void*>(inputs[" + std::to_string(slots[i].input) + "])" + comment;
    else if (slots[i].output >= 0) s += ti + "outputs[" + std::to_string(slots[i].output) + "]" + comment;
    else {
      s += "  static void* const buffer" + std::to_string(i) + " = std::malloc(" + std::to_string(std::max<int64_t>(4, slots[i].bytes)) + ");\n";
      s += "  if (!buffer" + std::to_string(i) + ") { prism_message = \"out of memory for a device tensor\"; return 1; }\n";
      s += ti + "buffer" + std::to_string(i) + comment;
    }
  }
  s += calls;
  for (const auto& [o, i] : copies)
    s += "  std::memcpy(outputs[" + std::to_string(o) + "], T[" + std::to_string(i) + "], " + std::to_string(slots[i].bytes) + ");\n";
  return s + "  return 0;\n}\n";
}

}  // namespace prism::test::scalar
