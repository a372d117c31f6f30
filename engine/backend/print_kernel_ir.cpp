#include "engine/backend/print_kernel_ir.h"

#include <algorithm>

#include "engine/backend/lower.h"
#include "engine/ir/ops.h"

namespace prism::backend {

namespace {

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// "v3[1, 64]", "W[b0*64 + f*8][8, 64] strides [64, 1]"
std::string place(const kir::Place& p) {
  std::string s = p.kind == kir::Place::Kind::Tensor ? p.tensor + "[" + offset_text(p.offset, "f", "") + "]" : "v" + std::to_string(p.value);
  if (p.start) s += "+" + std::to_string(p.start);
  return s + list(p.shape) + " strides " + list(p.strides);
}

std::string what(const kir::Stmt& s) {
  switch (s.kind) {
    case kir::Stmt::Kind::Bind: break;  // statement() prints it
    case kir::Stmt::Kind::Stage: return "stage";
    case kir::Stmt::Kind::Save: return "save";
    case kir::Stmt::Kind::Accumulate: return sgraph::acc_name(s.acc);
    case kir::Stmt::Kind::Compute: break;
  }
  std::string op = op_name(s.op);
  if (s.op == Op::Const) op += " " + std::to_string(s.constant);
  if (s.into_accumulator) op += " (into its accumulator)";
  if (s.finite_shift) op += " (a max of -inf read as 0)";
  return op;
}

std::string statement(const kir::Stmt& s, const std::string& indent) {
  const std::string comment = s.label.empty() ? "" : "  # " + s.label;
  if (s.kind == kir::Stmt::Kind::Bind) return indent + "v" + std::to_string(s.value) + " is " + place(s.out) + comment + "\n";
  std::string t = indent + place(s.out) + " = " + what(s) + "(";
  for (size_t i = 0; i < s.in.size(); ++i) t += (i ? ", " : "") + place(s.in[i]);
  return t + ")" + comment + "\n";
}

std::string custom(const kir::CustomKernel& k) {
  std::string s = "custom, grid " + list(k.grid) + ", loop " + std::to_string(k.loop) + ", " + std::to_string(k.fast_memory_bytes) +
                  " bytes of fast memory\n";
  for (const kir::Tile& t : k.tiles)
    s += "  tile v" + std::to_string(t.value) + " " + t.name + ": " + dtype_name(t.storage) + list(t.shape) + " at byte " +
         std::to_string(t.offset_bytes) + "\n";
  for (const kir::Accumulator& a : k.accumulators)
    s += "  accumulator v" + std::to_string(a.value) + " " + a.name + ": " + sgraph::acc_name(a.acc) + " of " + std::to_string(a.elements) +
         " elements\n";
  for (const auto& [name, phase] : {std::pair{"before the loop", &k.before}, {"the loop body", &k.body}, {"after the loop", &k.after}}) {
    if (phase->empty()) continue;
    s += std::string("  ") + name + ":\n";
    for (const kir::Stmt& st : *phase) s += statement(st, "    ");
  }
  return s;
}

}  // namespace

std::string print_kernel_ir(const kir::Program& program) {
  std::string s;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const kir::Tensor& t = program.tensors[i];
    const bool returned = std::find(program.outputs.begin(), program.outputs.end(), t.name) != program.outputs.end();
    s += "tensor " + t.name + ": " + dtype_name(t.dtype) + list(t.shape) +
         (i < program.inputs ? " (input)" : returned ? " (returned)" : " (written by a kernel)") + "\n";
  }
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const kir::Kernel& kernel = program.kernels[k];
    s += "kernel " + std::to_string(k) + ": ";
    s += kernel.custom ? custom(kernel.block) : "library\n" + statement(kernel.library, "  ");
  }
  return s;
}

}  // namespace prism::backend
