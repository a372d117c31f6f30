#include "engine/ir/print.h"

#include <charconv>
#include <cmath>

#include "engine/ir/decimal.h"
#include "engine/ir/parenthesized.h"
#include "engine/ir/visitor.h"

namespace prism {

std::string type_str(const Type& type) { return std::string(dtype_name(type.dtype)) + shape_str(type.shape); }

std::string constant_str(const Constant& c) {
  if (c.exact) {
    if (auto i = c.exact->as_integer(); i && *i >= 0) return std::to_string(*i);
    if (auto s = c.exact->as_symbol()) return *s;
    // A decimal literal's value reads as the literal ("0.1", "1e-06"), which reads back exactly.
    if (auto v = c.exact->constant_value(); v && !v->is_integer())
      if (auto text = decimal_text(*v)) return *v < Rational(0) ? parenthesized(*text) : *text;
    return parenthesized(c.exact->str());
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, c.number);  // shortest text that reads back exactly
  std::string s(buf, res.ptr);
  // Keep it a float literal: "2" would read back as the exact integer 2.
  if (std::isfinite(c.number) && s.find_first_of(".e") == std::string::npos) s += ".0";
  return c.number < 0 ? parenthesized(s) : s;
}

std::string op_spelling(const Value& v) { return v.op == Op::Cast ? dtype_name(v.type.dtype) : op_name(v.op); }

namespace {

std::string axis_str(int axis, size_t rank) { return std::to_string(axis - int(rank)); }

class Printer : public Visitor {
 public:
  explicit Printer(const Program& p) : p_(p) {}

  std::string run() {
    out_ = signature_head(p_) + " {\n";
    visit(p_);
    out_ += "  return ";
    for (size_t i = 0; i < p_.outputs.size(); ++i) out_.append(i ? ", " : "").append(ref(p_.outputs[i]));
    out_ += "\n}\n";
    return out_;
  }

  static std::string signature_head(const Program& p) {
    std::string s = "program " + p.name + "(";
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const Value& v = p.value(p.inputs[i]);
      s.append(i ? ", " : "").append(v.name + ": " + type_str(v.type) + domain_suffix(v.domain));
    }
    return s + ")";
  }

 protected:
  void visit_input(const Value&) override {}
  void visit_const(const Value&) override {}
  void visit_unary(const Value& v) override {
    if (v.op == Op::Neg) line(v, std::string("-").append(ref(v.operands[0])));
    else line(v, call(v, {ref(v.operands[0])}));
  }
  void visit_binary(const Value& v) override {
    const char* sym = v.op == Op::Add ? " + " : v.op == Op::Sub ? " - " : v.op == Op::Mul ? " * " : " / ";
    line(v, ref(v.operands[0]) + sym + ref(v.operands[1]));
  }
  void visit_matmul(const Value& v) override { line(v, call(v, {ref(v.operands[0]), ref(v.operands[1])})); }
  void visit_reduce(const Value& v) override { line(v, reduction(v)); }
  void visit_composite(const Value& v) override {
    if (v.op == Op::Mean) return line(v, reduction(v));
    if (v.op == Op::RmsNorm || v.op == Op::LayerNorm) {
      std::vector<std::string> args{ref(v.operands[0])};
      if (v.attrs.eps) args.push_back("eps=" + constant_str({std::nullopt, *v.attrs.eps}));
      return line(v, call(v, args));
    }
    line(v, call(v, {ref(v.operands[0]), "axis=" + axis_str(v.attrs.axis, rank(v.operands[0]))}));
  }
  void visit_transpose(const Value& v) override {
    size_t r = v.attrs.perm.size();
    bool swap_last = r >= 2;
    for (size_t i = 0; i < r && swap_last; ++i) {
      size_t expect = i == r - 1 ? r - 2 : i == r - 2 ? r - 1 : i;
      swap_last = v.attrs.perm[i] == int(expect);
    }
    std::vector<std::string> args{ref(v.operands[0])};
    if (!swap_last) {
      std::string perm = "perm=[";
      for (size_t i = 0; i < r; ++i) perm.append(i ? ", " : "").append(std::to_string(v.attrs.perm[i]));
      args.push_back(perm + "]");
    }
    line(v, call(v, args));
  }
  void visit_reshape(const Value& v) override {
    std::string shape = "[";
    for (size_t i = 0; i < v.attrs.shape.size(); ++i) shape.append(i ? ", " : "").append(v.attrs.shape[i].str());
    line(v, call(v, {ref(v.operands[0]), shape + "]"}));
  }
  void visit_concat(const Value& v) override {
    std::vector<std::string> args;
    for (int o : v.operands) args.push_back(ref(o));
    args.push_back("axis=" + axis_str(v.attrs.axis, rank(v.operands[0])));
    line(v, call(v, args));
  }
  // The parts of one split are consecutive values; they print as one tuple assignment.
  void visit_split(const Value& v) override {
    if (v.attrs.index != 0) return;
    std::string names, types;
    for (int i = 0; i < v.attrs.parts; ++i) {
      const Value& part = p_.value(v.id + i);
      names.append(i ? ", " : "").append(part.name);
      types.append(i ? ", " : "").append(type_str(part.type));
    }
    std::string rhs = call(v, {ref(v.operands[0]), std::to_string(v.attrs.parts),
                               "axis=" + axis_str(v.attrs.axis, rank(v.operands[0]))});
    out_ += "  " + names + " = " + rhs + "  # " + types + "\n";
  }

 private:
  size_t rank(int id) const { return p_.value(id).type.shape.size(); }
  std::string ref(int id) const {
    const Value& v = p_.value(id);
    return v.op == Op::Const ? constant_str(v.attrs.constant) : v.name;
  }
  static std::string call(const Value& v, const std::vector<std::string>& args) {
    std::string s = op_spelling(v) + "(";
    for (size_t i = 0; i < args.size(); ++i) s.append(i ? ", " : "").append(args[i]);
    return s + ")";
  }
  std::string reduction(const Value& v) const {
    std::vector<std::string> args{ref(v.operands[0]), "axis=" + axis_str(v.attrs.axis, rank(v.operands[0]))};
    if (!v.attrs.keepdims) args.push_back("keepdims=false");
    return call(v, args);
  }
  void line(const Value& v, const std::string& rhs) { out_ += "  " + v.name + " = " + rhs + "  # " + type_str(v.type) + "\n"; }

  const Program& p_;
  std::string out_;
};

}  // namespace

std::string signature(const Program& program) {
  std::string s = Printer::signature_head(program) + " -> ";
  if (program.outputs.size() != 1) s += "(";
  for (size_t i = 0; i < program.outputs.size(); ++i) s.append(i ? ", " : "").append(type_str(program.value(program.outputs[i]).type));
  if (program.outputs.size() != 1) s += ")";
  return s;
}

std::string print_program(const Program& program) { return Printer(program).run(); }

}  // namespace prism
