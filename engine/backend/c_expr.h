// The op table's elementwise formulas (ir/ops.h) printed as C in a code generator's dialect: the
// CPU's host C++ and CUDA C++ print the same formula text, so generated kernels, eager baselines
// and the reference interpreter compute one formula. Unary ops are called as prism_<name>(x),
// defined once per generated source by elementwise_functions; binary ops are written inline.
#pragma once
#include <string>
#include <vector>

#include "engine/ir/ops.h"

namespace prism::backend {

struct Dialect {
  const char* function_prefix;  // how a helper function is declared: "static inline", "__device__ __forceinline__"
  bool builtin_math;            // C's math functions as GCC builtins (expf -> __builtin_expf): no header needed
  const char* select_bits;      // prism_select(c, v)'s body: v's bits where c holds, else 0 (ir/ops.cpp, mask)
};
inline constexpr Dialect kHostC{"static inline", true, "__builtin_bit_cast(float, __builtin_bit_cast(unsigned, v) & (0u - unsigned(c)))"};
inline constexpr Dialect kCudaC{"__device__ __forceinline__", false, "__uint_as_float(__float_as_uint(v) & (0u - unsigned(c)))"};

// A C function name in the dialect: "expf" -> "__builtin_expf" on the host.
std::string math_function(const std::string& name, const Dialect& dialect);

// The C expression of elementwise op `op` on operand expressions (one for a unary op, two for a
// binary one), parenthesized. Throws Error{InvalidArgument} ("<who>: 'matmul' is not an
// elementwise op it can lower") for anything else.
std::string elementwise_expr(Op op, const std::vector<std::string>& operands, const Dialect& dialect, const std::string& who);

// A float literal for `value` rounded to f32, in the shortest text that reads back exactly
// ("0.125f", "1e-06f", "-2.0f"); a C expression for infinities and NaN.
std::string float_literal(double value);

// The definitions of prism_<name>(float x) for every unary op of the table, and of the helpers
// the table's formulas call (prism_select), in `dialect`.
std::string elementwise_functions(const Dialect& dialect);

}  // namespace prism::backend
