#include "engine/sgraph/print.h"

#include "engine/ir/print.h"
#include "engine/sgraph/validate.h"
#include "engine/sgraph/visitor.h"

namespace prism::sgraph {

namespace {

constexpr size_t kCommentColumn = 52;

std::string choice_str(const Choice& c) {
  if (c.symbolic()) return "?" + c.var;
  return c.is_none() ? "-" : std::to_string(c.dim);
}

std::string attrs_str(const Attrs& attrs, bool keepdims) {
  std::string out = ", axis=" + std::to_string(attrs.axis);
  if (keepdims && !attrs.keepdims) out += ", keepdims=false";
  return out;
}

// A compute op's attributes in the text form: a reduction's axis (and keepdims), a split's axis,
// parts and index, a concat's axis; none for the others.
std::string op_attrs_str(Op op, const Attrs& attrs) {
  if (op_class(op) == OpClass::Reduce) return attrs_str(attrs, true);
  if (op == Op::Concat) return attrs_str(attrs, false);
  if (op == Op::Split)
    return attrs_str(attrs, false).append(", parts=").append(std::to_string(attrs.parts)).append(", index=").append(std::to_string(attrs.index));
  return "";
}

class Printer : public Visitor {
 public:
  Printer(const SGraph& g) : g_(g), a_(analyze(g)) {}

  std::string run() {
    for (const TensorDecl& in : g_.inputs) out_ += "input " + in.name + ": " + type_str(in.type) + "\n";
    visit(g_);
    if (!g_.outputs.empty()) {
      out_ += "output ";
      for (size_t i = 0; i < g_.outputs.size(); ++i) out_ += (i ? ", " : "") + g_.outputs[i];
      out_ += "\n";
    }
    return out_;
  }

 protected:
  void visit_library(int k, const LibraryKernel& lib) override {
    std::string line = "kernel " + std::to_string(k) + ": " + lib.output + ": " + dtype_name(lib.dtype) + " = " + op_name(lib.op) + "(";
    for (size_t i = 0; i < lib.inputs.size(); ++i)
      line += (i ? ", " : "") + lib.inputs[i] + (lib.view(i).empty() ? "" : " view " + view_text(lib.view(i)));
    if (op_class(lib.op) == OpClass::Reduce) line += attrs_str(lib.attrs, true);
    if (op_class(lib.op) == OpClass::Reshape) line += ", shape=" + shape_str(lib.attrs.shape);
    if (op_class(lib.op) == OpClass::Transpose) line += ", perm=" + view_text(lib.attrs.perm);
    line += ")";
    auto it = a_.tensors.find(lib.output);
    emit(line, it != a_.tensors.end() ? type_str(it->second) : "");
  }

  void begin_custom(int k, const CustomKernel& kernel) override {
    kernel_ = k;
    std::string line = "kernel " + std::to_string(k) + ": custom grid=[";
    for (size_t i = 0; i < kernel.grid.size(); ++i) line += (i ? ", " : "") + kernel.grid[i].str();
    line += "]";
    if (kernel.loop) line += " loop=" + kernel.loop->str();
    out_ += line + "\n";
  }

  void visit_load(const CustomKernel& kernel, int i, const BlockOp& op) override {
    const std::string view = op.view.empty() ? "" : " view " + view_text(op.view);
    emit("  " + op.name + " = load " + op.tensor + view + " map " + map_str(op.map, kernel), tile(i));
  }

  void visit_compute(const CustomKernel& kernel, int i, const BlockOp& op) override {
    std::string line = "  " + op.name + " = " + op_name(op.op) + "(" + operands(kernel, op);
    if (op.op == Op::Const) line += constant_str(op.attrs.constant);
    line += op_attrs_str(op.op, op.attrs);
    emit(line + ")", tile(i));
  }

  void visit_accumulate(const CustomKernel& kernel, int i, const BlockOp& op) override {
    std::string line = "  " + op.name + " = " + acc_name(op.acc) + "(" + operands(kernel, op);
    if (op.acc == AccKind::Rms) line += attrs_str(op.attrs, false);
    emit(line + ")", tile(i));
  }

  void visit_save(const CustomKernel& kernel, int i, const BlockOp& op) override {
    const std::string view = op.view.empty() ? "" : " view " + view_text(op.view);
    emit("  save " + op.name + ": " + dtype_name(op.dtype) + " = " + operands(kernel, op) + view + " map " + map_str(op.map, kernel), tile(i));
  }

 private:
  std::string operands(const CustomKernel& kernel, const BlockOp& op) const {
    std::string out;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      int o = op.operands[i];
      if (i) out += ", ";
      if (o >= 0 && size_t(o) < kernel.ops.size()) out += kernel.ops[size_t(o)].name;
      else out.append("<").append(std::to_string(o)).append(">");
    }
    return out;
  }

  std::string tile(int i) const {
    if (size_t(kernel_) >= a_.tiles.size() || size_t(i) >= a_.tiles[size_t(kernel_)].size()) return "";
    const auto& t = a_.tiles[size_t(kernel_)][size_t(i)].type;
    return t ? type_str(*t) : "";
  }

  void emit(const std::string& code, const std::string& comment) {
    out_ += code;
    if (!comment.empty()) out_ += std::string(code.size() < kCommentColumn ? kCommentColumn - code.size() : 2, ' ') + "# " + comment;
    out_ += "\n";
  }

  const SGraph& g_;
  Analysis a_;
  std::string out_;
  int kernel_ = 0;
};

}  // namespace

std::string map_str(const Map& map, const CustomKernel& kernel) {
  std::string grid;
  for (size_t i = 0; i < map.grid.size(); ++i) {
    if (map.grid[i].is_none()) continue;
    if (!grid.empty()) grid += " ";
    grid += choice_str(map.grid[i]) + "->" + (i < kernel.grid.size() ? kernel.grid[i].str() : "<grid " + std::to_string(i) + ">");
  }
  return "{grid: " + (grid.empty() ? std::string("-") : grid) + ", loop: " + choice_str(map.loop) + "}";
}

std::string print(const SGraph& graph) { return Printer(graph).run(); }

}  // namespace prism::sgraph
