// The op table: one row per op of the IR, and every stage that needs to know what an op is reads
// it: the language (names, arity), shape inference (the class is the shape rule), the reference
// interpreter (the scalar semantics of elementwise ops), the e-graph (every op is a term operator
// under its own code, egraph/tensor_lang.h), the search's enumeration and fingerprint (the field
// model), the cost model and roofline (flops), and both code generators and eager baselines (the
// C expression, printed per dialect by backend/c_expr.h). Adding an elementwise op is one
// enumerator and one row in ops.cpp, plus its tests (docs/ops.md says how).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace prism {

// Ops are grouped by class, a class a line.
// clang-format off
enum class Op : uint8_t {
  Input, Const,
  // elementwise unary
  Neg, Exp, Log, Sqrt, Rsqrt, Square, Silu, Gelu, GeluTanh, Relu, Tanh, Sigmoid, Abs, Erf,
  Cast,  // rounds to Attrs::dtype (f32(x), f16(x), bf16(x)): the identity on the reals
  // elementwise binary, numpy broadcasting
  Add, Sub, Mul, Div, Pow, Minimum, Maximum,
  Gt, Ge, Eq, Ne,  // comparisons: 1 where true, else 0 (NaN compares false, as in C and PyTorch)
  Mask,            // mask(m, x): x where m is nonzero, else 0 (where() is written with it)
  Matmul,
  // reductions over one axis
  Sum, Max, Rms,
  // composites, lowered by lower_composites
  Mean, RmsNorm, LayerNorm, Softmax,
  // data movement
  Transpose, Reshape, Concat, Split,  // Split stays last: kOpCount counts up to it
};
// clang-format on
inline constexpr size_t kOpCount = size_t(Op::Split) + 1;

// The class of an op is also its shape rule: Unary keeps the shape, Binary broadcasts (NumPy),
// Matmul contracts the last two dims (batch dims broadcast), Reduce folds one axis.
enum class OpClass { Input, Const, Unary, Binary, Matmul, Reduce, Composite, Transpose, Reshape, Concat, Split };

// How the search's finite-field fingerprint (search/fingerprint.h) models an elementwise op. An
// opaque op is an uninterpreted function of its operand's field element: sound for any op (the
// same inputs give the same outputs), so a new op needs no model to be fingerprinted; it only
// cannot see identities inside the op, which no axiom uses either.
// clang-format off
enum class FieldModel : uint8_t {
  None,    // no model: families using the op are left to the proof (log: the field has no log)
  Opaque,  // an uninterpreted function, keyed by the op (a binary op's also by its second operand)
  Identity,                       // the value itself (a cast: rounding is no part of the field)
  Neg, Exp, Square, Silu, Rsqrt,  // exact models (rsqrt: 1 / sqrt, sqrt opaque)
  Add, Sub, Mul, Div,
};
// clang-format on

struct OpInfo {
  Op op;
  const char* name;  // in the language, the sGraph text and the e-graph's patterns
  OpClass cls;
  int arity;  // operands; -1: two or more (concat)
  // Elementwise ops: the reference semantics, f32 in and out (the interpreter's), and the same
  // formula as C source over `x` (and `y`), with C99's float math functions (expf, erff, …).
  float (*unary)(float);
  float (*binary)(float, float);
  const char* c_expr;
  FieldModel field;
  // Flops the cost model and the roofline count: per result element of an elementwise op, per
  // input element of a reduction, per multiply-add of a matmul (two). Transcendentals count 1.
  double flops;
};

const OpInfo& op_info(Op op);
// The flops of one application of `op` (the table's count times the elements it applies to)
// with a result of shape `result` and a first operand of shape `operand` (a matmul contracts its
// last dim). 0 for ops that move data only.
double op_flops(Op op, const std::vector<int64_t>& result, const std::vector<int64_t>& operand);
std::span<const OpInfo> op_table();  // every row, in Op order
// The ops of one class, in Op order (the search enumerates them; the e-graph's axioms quantify over them).
std::vector<Op> ops_of_class(OpClass cls);

inline OpClass op_class(Op op) { return op_info(op).cls; }
inline const char* op_name(Op op) { return op_info(op).name; }  // "matmul", "rms_norm"
inline bool is_elementwise(Op op) { return op_class(op) == OpClass::Unary || op_class(op) == OpClass::Binary; }
// Callable ops only (not input/const); a dtype's name (f32, f16, bf16) is the cast to it.
std::optional<Op> op_from_name(const std::string& name);
const std::vector<std::string>& op_names();  // every callable name (the casts by their dtypes' names)

}  // namespace prism
