#include "engine/lang/op_signature.h"

namespace prism {

std::vector<ParamSpec> op_params(Op op) {
  const ParamSpec x{"x", ArgKind::Tensor, true, nullptr};
  const ParamSpec axis{"axis", ArgKind::Int, false, "-1"};
  const ParamSpec keepdims{"keepdims", ArgKind::Bool, false, "true"};
  switch (op_class(op)) {
    case OpClass::Unary: return {x};
    case OpClass::Binary:
    case OpClass::Matmul: return {{"a", ArgKind::Tensor, true, nullptr}, {"b", ArgKind::Tensor, true, nullptr}};
    case OpClass::Reduce: return {x, axis, keepdims};
    case OpClass::Composite:
      if (op == Op::Mean) return {x, axis, keepdims};
      if (op == Op::RmsNorm) return {x, {"eps", ArgKind::Number, false, "0"}};
      if (op == Op::LayerNorm) return {x, {"eps", ArgKind::Number, false, "1e-05"}};
      return {x, axis};
    case OpClass::Transpose: return {x, {"perm", ArgKind::IntList, false, "swap the last two"}};
    case OpClass::Reshape: return {x, {"shape", ArgKind::DimList, true, nullptr}};
    case OpClass::Split: return {x, {"parts", ArgKind::Int, true, nullptr}, axis};
    case OpClass::Concat: return {axis};
    default: return {};
  }
}

namespace {
// The signature's text, each parameter's range recorded as it is written.
std::string render(Op op, std::vector<std::pair<size_t, size_t>>* ranges) {
  std::string out = std::string(op_name(op)) + "(";
  auto param = [&](const std::string& text) {
    if (out.back() != '(') out += ", ";
    if (ranges) ranges->push_back({out.size(), out.size() + text.size()});
    out += text;
  };
  if (op == Op::Concat) {
    param("x");
    param("...");
  }
  for (const ParamSpec& p : op_params(op)) {
    std::string text = p.name;
    // An optional argument whose absence is not a value ("swap the last two") shows as name=….
    if (!p.required && p.fallback) text.append("=").append(p.kind == ArgKind::IntList ? "[...]" : p.fallback);
    param(text);
  }
  return out + ")";
}
}  // namespace

std::string op_signature(Op op) { return render(op, nullptr); }

std::vector<std::pair<size_t, size_t>> op_signature_params(Op op) {
  std::vector<std::pair<size_t, size_t>> ranges;
  render(op, &ranges);
  return ranges;
}

namespace {
constexpr SpelledCall kSpelledCalls[] = {
    {"where", "where(condition, input, other)", "input where condition is nonzero, else other: mask(c, input) + mask(c == 0, other)"},
    {"clamp", "clamp(input, min=none, max=none)", "maximum(input, min), then minimum(that, max); NaN stays NaN"},
    {"pow", "pow(input, exponent)", "input ** exponent: 2 as square, 3 as x*x*x, 0.5 as sqrt, -0.5 as rsqrt, -1 as 1/x, else powf"},
};
}  // namespace

std::span<const SpelledCall> spelled_calls() { return kSpelledCalls; }

std::vector<std::pair<std::string, std::string>> language_reference() {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const OpInfo& row : op_table())
    if (row.op != Op::Input && row.op != Op::Const && row.op != Op::Cast && row.op != Op::Pow) rows.push_back({op_signature(row.op), op_summary(row.op)});
  rows.push_back({"f32(x), f16(x), bf16(x)", "rounds each element to the dtype (a cast)"});
  for (const SpelledCall& c : kSpelledCalls) rows.push_back({c.signature, c.summary});
  rows.push_back({"a + b, a - b, a * b, a / b, -a", "add, sub, mul, div, neg"});
  rows.push_back({"a @ b", "matmul(a, b)"});
  rows.push_back({"a ** b", "pow(a, b)"});
  rows.push_back({"a > b, a >= b, a < b, a <= b", "gt(a, b), ge(a, b), gt(b, a), ge(b, a): 1 where true, else 0"});
  rows.push_back({"a == b, a != b", "eq(a, b), ne(a, b)"});
  rows.push_back({"x.T, x.mT", "transpose of a 2-D x; of x's last two dims"});
  rows.push_back({"dim=, keepdim=", "PyTorch's names for axis= and keepdims="});
  return rows;
}

std::string op_summary(Op op) {
  const OpInfo& info = op_info(op);
  switch (info.cls) {
    case OpClass::Unary: return "elementwise: " + std::string(info.c_expr) + " for each element x";
    case OpClass::Binary:
      if (op == Op::Mask) return "elementwise: y where x != 0, else 0 (a select: a NaN or infinity masked out is 0), for x in a, y in b, broadcast NumPy-style";
      return "elementwise: " + std::string(info.c_expr) + " for x in a, y in b, broadcast NumPy-style";
    case OpClass::Matmul: return "matrix product over the last two dims of a and b; leading dims broadcast";
    case OpClass::Reduce: return std::string("reduces one axis by ") + (op == Op::Sum ? "sum" : op == Op::Max ? "max" : "root mean square");
    case OpClass::Composite:
      if (op == Op::Mean) return "the mean along one axis (sum / its size)";
      if (op == Op::RmsNorm) return "x / sqrt(mean(x*x, axis=-1) + eps): RMSNorm without its gain";
      if (op == Op::LayerNorm) return "(x - mean(x)) / sqrt(var(x) + eps) over the last axis: LayerNorm without its weight and bias";
      return "exp(x - max) / sum(exp(x - max)) along one axis";
    case OpClass::Transpose: return "permutes the dims (perm); without perm, swaps the last two";
    case OpClass::Reshape: return "the same elements under a new shape of symbolic dims";
    case OpClass::Concat: return "joins the tensors along one axis";
    case OpClass::Split: return "cuts x into `parts` equal pieces along one axis (one value per piece)";
    default: return "";
  }
}

}  // namespace prism
