// The scalar backend's eager baseline: the program's ops one at a time over whole tensors
// (engine/backend/eager_plan.h), each a plain loop nest, matmuls included.
#include "engine/backend/c_expr.h"
#include "engine/backend/eager_plan.h"
#include "engine/backend/view.h"
#include "tests/backends/scalar/printing.h"

namespace prism::test::scalar {

namespace {

namespace eager = backend::eager;

std::string lit(int64_t v) { return std::to_string(v) + "LL"; }

// Built by append: GCC 12 misreports `"b" + std::string` under -Wrestrict (PR 105329).
std::string buffer(int b) { return std::string("b").append(std::to_string(b)); }

// The element an access reads or writes at the loop indices i0, i1 …, plus `extra` (an index
// expression, "" for none); a constant's literal.
std::string element(const eager::Access& a, const std::string& extra = "") {
  if (a.buffer < 0) return eager::float_literal(a.constant, "NAN", "INFINITY");
  std::string index = lit(a.offset) + " + " + backend::index_offset(a.strides, "LL");
  if (!extra.empty()) index += " + " + extra;
  return buffer(a.buffer) + "[" + index + "]";
}

std::string read(const eager::Access& a, const std::string& extra = "") {
  return a.buffer < 0 ? element(a) : "prism_wide(" + element(a, extra) + ")";
}

std::string gather(const eager::Step& s) {
  std::vector<std::string> in;
  for (const eager::Access& a : s.in) in.push_back(read(a));
  const std::string value = s.elementwise ? backend::elementwise_expr(s.op, in, backend::kHostC, "scalar") : in.at(0);
  return loop_nest(s.shape, "    ", "prism_put(" + element(s.out) + ", " + value + ");");
}

// Each batch element's m x n result, each a dot product over k in order; an operand stored
// transposed is read so.
std::string matmul(const eager::Step& s) {
  const std::string M = lit(s.m), N = lit(s.n), K = lit(s.k);
  const std::string a = read(s.in.at(0), s.trans_a ? "kk * " + M + " + mm" : "mm * " + K + " + kk");
  const std::string b = read(s.in.at(1), s.trans_b ? "nn * " + K + " + kk" : "kk * " + N + " + nn");
  const std::string body = "for (i64 mm = 0; mm < " + M + "; ++mm) for (i64 nn = 0; nn < " + N + "; ++nn) { float acc = 0.0f; " +
                           "for (i64 kk = 0; kk < " + K + "; ++kk) acc += " + a + " * " + b + "; prism_put(" +
                           element(s.out, "mm * " + N + " + nn") + ", acc); }";
  return loop_nest(s.shape, "    ", body);
}

// out[o, i] = the fold of x[o, j, i] over j in order, as the interpreter does.
std::string reduce(const eager::Step& s) {
  const eager::FoldText f = eager::fold_text(s.op, s.k, {"std::isnan", "std::sqrt", "INFINITY"});
  const std::string x = buffer(s.in.at(0).buffer), out = buffer(s.out.buffer);
  const std::string body = "float acc = " + f.init + "; for (i64 j = 0; j < " + lit(s.k) + "; ++j) { const float x = prism_wide(" + x + "[" +
                           lit(s.in[0].offset) + " + (i0 * " + lit(s.k) + " + j) * " + lit(s.inner) + " + i1]); " + f.update +
                           " } prism_put(" + out + "[" + lit(s.out.offset) + " + i0 * " + lit(s.inner) + " + i1], " + f.result + ");";
  return loop_nest({s.outer, s.inner}, "    ", body);
}

}  // namespace

std::string eager_source(const Program& lowered, const DimBindings& dims) {
  const eager::Plan plan = eager::plan(lowered, dims);
  std::vector<Slot> slots;
  std::string calls = "  {\n";
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const eager::Buffer& b = plan.buffers[i];
    const int slot = int(b.slot);
    slots.push_back({b.name, b.elements * dtype_bytes(b.dtype), b.role == eager::Buffer::Role::Input ? slot : -1,
                     b.role == eager::Buffer::Role::Output ? slot : -1});
    const std::string type = type_name(b.dtype);
    calls += "    " + type + "* const " + buffer(int(i)) + " = static_cast<" + type + "*>(T[" + std::to_string(i) + "]);\n";
  }
  for (const eager::Step& s : plan.steps) {
    calls += "    // " + s.value + " = " + s.what + "\n";
    calls += s.kind == eager::Step::Kind::Gather ? gather(s) : s.kind == eager::Step::Kind::Matmul ? matmul(s) : reduce(s);
  }
  calls += "  }\n";
  const std::string tensors = "\nstatic void* T[" + std::to_string(std::max<size_t>(1, slots.size())) + "];  // the plan's buffers\n\n";
  return std::string(runtime()) + backend::elementwise_functions(backend::kHostC) + tensors + entry_source(slots, calls, {});
}

}  // namespace prism::test::scalar
