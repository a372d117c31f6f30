#include "engine/ir/ops.h"

#include <math.h>

#include <algorithm>
#include <bit>
#include <cstdint>

#include "engine/ir/dtype.h"
#include "engine/ir/shape.h"

namespace prism {

namespace {

// mask's select, by bits: v where c holds, else +0 (a NaN or infinity in v included). Generated
// code defines it too (backend/c_expr.h): GCC 12.2 at -O3 miscompiles a loop of the ?: select
// after a comparison of the same value (docs/testing.md, "The host compiler's wrong code").
inline float prism_select(bool c, float v) { return std::bit_cast<float>(std::bit_cast<uint32_t>(v) & (0u - uint32_t(c))); }

// clang-format off
// An elementwise row from one formula: the reference function and its C text are the same
// tokens, so the interpreter and every code generator compute one formula. The formula is C
// (expf, not std::exp) over x and y; float literals carry their f.
#define PRISM_UNARY(OP, NAME, FIELD, EXPR) \
  OpInfo { Op::OP, NAME, OpClass::Unary, 1, [](float x) -> float { return EXPR; }, nullptr, #EXPR, FieldModel::FIELD, 1 }
#define PRISM_BINARY(OP, NAME, FIELD, EXPR) \
  OpInfo { Op::OP, NAME, OpClass::Binary, 2, nullptr, [](float x, float y) -> float { return EXPR; }, #EXPR, FieldModel::FIELD, 1 }
#define PRISM_OP(OP, NAME, CLASS, ARITY, FLOPS) \
  OpInfo { Op::OP, NAME, OpClass::CLASS, ARITY, nullptr, nullptr, nullptr, FieldModel::None, FLOPS }

constexpr OpInfo kOps[] = {
    PRISM_OP(Input, "input", Input, 0, 0),
    PRISM_OP(Const, "const", Const, 0, 0),
    PRISM_UNARY(Neg, "neg", Neg, -x),
    PRISM_UNARY(Exp, "exp", Exp, expf(x)),
    PRISM_UNARY(Log, "log", None, logf(x)),
    PRISM_UNARY(Sqrt, "sqrt", Opaque, sqrtf(x)),
    PRISM_UNARY(Rsqrt, "rsqrt", Rsqrt, 1.0f / sqrtf(x)),
    PRISM_UNARY(Square, "square", Square, x * x),
    PRISM_UNARY(Silu, "silu", Silu, x / (1.0f + expf(-x))),
    // The exact GELU (erf), as torch.nn.GELU() by default; and the tanh form, as
    // F.gelu(approximate="tanh") computes it (Gemma's and GPT-2's MLPs): one op, not nine, for the
    // search to place.
    PRISM_UNARY(Gelu, "gelu", Opaque, 0.5f * x * (1.0f + erff(x * 0.70710678118654752f))),
    PRISM_UNARY(GeluTanh, "gelu_tanh", Opaque, 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)))),
    PRISM_UNARY(Relu, "relu", Opaque, x < 0.0f ? 0.0f : x),  // keeps NaN
    PRISM_UNARY(Tanh, "tanh", Opaque, tanhf(x)),
    PRISM_UNARY(Sigmoid, "sigmoid", Opaque, 1.0f / (1.0f + expf(-x))),
    PRISM_UNARY(Abs, "abs", Opaque, fabsf(x)),
    PRISM_UNARY(Erf, "erf", Opaque, erff(x)),
    // Rounding to a dtype happens where every value's result is stored at its dtype: the op
    // itself moves the value unchanged, and counts no flops.
    OpInfo{Op::Cast, "cast", OpClass::Unary, 1, [](float x) -> float { return x; }, nullptr, "x", FieldModel::Identity, 0},
    PRISM_BINARY(Add, "add", Add, x + y),
    PRISM_BINARY(Sub, "sub", Sub, x - y),
    PRISM_BINARY(Mul, "mul", Mul, x * y),
    PRISM_BINARY(Div, "div", Div, x / y),
    PRISM_BINARY(Pow, "pow", Opaque, powf(x, y)),
    // NaN in either operand gives NaN, as torch.minimum and torch.maximum (fminf would drop it).
    PRISM_BINARY(Minimum, "minimum", Opaque, (x < y || x != x) ? x : y),
    PRISM_BINARY(Maximum, "maximum", Opaque, (x > y || x != x) ? x : y),
    PRISM_BINARY(Gt, "gt", Opaque, x > y ? 1.0f : 0.0f),
    PRISM_BINARY(Ge, "ge", Opaque, x >= y ? 1.0f : 0.0f),
    PRISM_BINARY(Eq, "eq", Opaque, x == y ? 1.0f : 0.0f),
    PRISM_BINARY(Ne, "ne", Opaque, x != y ? 1.0f : 0.0f),
    // Selects, never multiplies: a masked -inf or NaN is 0, not NaN.
    PRISM_BINARY(Mask, "mask", Opaque, prism_select(x != 0.0f, y)),
    PRISM_OP(Matmul, "matmul", Matmul, 2, 2),
    PRISM_OP(Sum, "sum", Reduce, 1, 1),
    PRISM_OP(Max, "max", Reduce, 1, 1),
    PRISM_OP(Rms, "rms", Reduce, 1, 1),
    PRISM_OP(Mean, "mean", Composite, 1, 0),
    PRISM_OP(RmsNorm, "rms_norm", Composite, 1, 0),
    PRISM_OP(LayerNorm, "layer_norm", Composite, 1, 0),
    PRISM_OP(Softmax, "softmax", Composite, 1, 0),
    PRISM_OP(Transpose, "transpose", Transpose, 1, 0),
    PRISM_OP(Reshape, "reshape", Reshape, 1, 0),
    PRISM_OP(Concat, "concat", Concat, -1, 0),
    PRISM_OP(Split, "split", Split, 1, 0),
};

#undef PRISM_UNARY
#undef PRISM_BINARY
#undef PRISM_OP
// clang-format on

constexpr bool in_op_order() {
  for (size_t i = 0; i < std::size(kOps); ++i)
    if (size_t(kOps[i].op) != i) return false;
  return std::size(kOps) == kOpCount;
}
static_assert(in_op_order(), "one row per op, in Op order");

// A cast is called by its dtype's name, not its row's.
bool callable(const OpInfo& row) { return row.op != Op::Input && row.op != Op::Const && row.op != Op::Cast; }

}  // namespace

const OpInfo& op_info(Op op) { return kOps[size_t(op)]; }

std::span<const OpInfo> op_table() { return kOps; }

double op_flops(Op op, const std::vector<int64_t>& result, const std::vector<int64_t>& operand) {
  const OpInfo& info = op_info(op);
  switch (info.cls) {
    case OpClass::Unary:
    case OpClass::Binary: return info.flops * double(element_count(result));
    case OpClass::Reduce: return info.flops * double(element_count(operand));
    case OpClass::Matmul: return info.flops * double(element_count(result)) * double(operand.empty() ? 1 : operand.back());
    default: return 0;
  }
}

std::vector<Op> ops_of_class(OpClass cls) {
  std::vector<Op> out;
  for (const OpInfo& row : kOps)
    if (row.cls == cls) out.push_back(row.op);
  return out;
}

std::optional<Op> op_from_name(const std::string& name) {
  if (parse_dtype(name)) return Op::Cast;
  for (const OpInfo& row : kOps)
    if (callable(row) && row.name == name) return row.op;
  return std::nullopt;
}

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const OpInfo& row : kOps)
      if (callable(row)) out.push_back(row.name);
    for (DType t : {DType::F32, DType::F16, DType::BF16}) out.push_back(dtype_name(t));
    return out;
  }();
  return names;
}

}  // namespace prism
