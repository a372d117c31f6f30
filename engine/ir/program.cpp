#include "engine/ir/program.h"

#include <algorithm>

namespace prism {

namespace {
struct OpRow {
  Op op;
  const char* name;
  OpClass cls;
};
constexpr OpRow kOps[] = {
    {Op::Input, "input", OpClass::Input},      {Op::Const, "const", OpClass::Const},
    {Op::Neg, "neg", OpClass::Unary},          {Op::Exp, "exp", OpClass::Unary},
    {Op::Log, "log", OpClass::Unary},          {Op::Sqrt, "sqrt", OpClass::Unary},
    {Op::Rsqrt, "rsqrt", OpClass::Unary},      {Op::Square, "square", OpClass::Unary},
    {Op::Silu, "silu", OpClass::Unary},        {Op::Gelu, "gelu", OpClass::Unary},
    {Op::Relu, "relu", OpClass::Unary},        {Op::Add, "add", OpClass::Binary},
    {Op::Sub, "sub", OpClass::Binary},         {Op::Mul, "mul", OpClass::Binary},
    {Op::Div, "div", OpClass::Binary},         {Op::Matmul, "matmul", OpClass::Matmul},
    {Op::Sum, "sum", OpClass::Reduce},         {Op::Max, "max", OpClass::Reduce},
    {Op::Rms, "rms", OpClass::Reduce},         {Op::Mean, "mean", OpClass::Composite},
    {Op::RmsNorm, "rms_norm", OpClass::Composite}, {Op::Softmax, "softmax", OpClass::Composite},
    {Op::Transpose, "transpose", OpClass::Transpose}, {Op::Reshape, "reshape", OpClass::Reshape},
    {Op::Concat, "concat", OpClass::Concat},   {Op::Split, "split", OpClass::Split},
};
const OpRow& row(Op op) {
  for (const auto& r : kOps)
    if (r.op == op) return r;
  return kOps[0];
}
}  // namespace

OpClass op_class(Op op) { return row(op).cls; }
const char* op_name(Op op) { return row(op).name; }

std::optional<Op> op_from_name(const std::string& name) {
  for (const auto& r : kOps)
    if (r.name == name && r.op != Op::Input && r.op != Op::Const) return r.op;
  return std::nullopt;
}

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& r : kOps)
      if (r.op != Op::Input && r.op != Op::Const) out.push_back(r.name);
    return out;
  }();
  return names;
}

bool Program::has_composites() const {
  return std::any_of(values.begin(), values.end(), [](const Value& v) { return op_class(v.op) == OpClass::Composite; });
}

}  // namespace prism
