#include <catch2/catch.hpp>

#include "compile_helpers.h"
#include "engine/ir/print.h"

using namespace prism;
using prism::test::diag_lines;
using prism::test::only_program;

namespace {
std::string out_type(const std::string& text, size_t i = 0) {
  Program p = only_program(text);
  return type_str(p.value(p.outputs.at(i)).type);
}
std::string wrap(const std::string& params, const std::string& body) {
  return "program p(" + params + ") {\n" + body + "\n}\n";
}
}  // namespace

TEST_CASE("names resolve and errors name them", "[engine][names]") {
  CHECK(diag_lines(wrap("X: f16[n]", "  return Z")) == "2:10: undefined name 'Z'\n");
  CHECK(diag_lines(wrap("X: f16[n]", "  Y = exp(X)\n  Y = exp(Y)\n  return Y")) == "3:3: 'Y' is already defined (line 2)\n");
  CHECK(diag_lines(wrap("X: f16[n, d], W: f16[d, d]", "  return matmull(X, W)")) ==
        "2:10: unknown op 'matmull'; did you mean 'matmul'?\n");
  CHECK(diag_lines(wrap("X: f16[n]", "  Y = exp(X)")) == "1:9: program 'p' has no return\n");
  CHECK(diag_lines(wrap("X: f16[n]", "  Y = exp(Xx)\n  return Y")) == "2:11: undefined name 'Xx'; did you mean 'X'?\n");
  CHECK(diag_lines(wrap("X: f64[n]", "  return X")) == "1:14: unknown dtype 'f64'; expected f32, f16 or bf16\n");
  CHECK(diag_lines(wrap("X: f16[n]", "  return X\n  Y = X")) == "3:3: statement after 'return'; 'return' must be the last statement\n");
  CHECK(diag_lines(wrap("X: f16[n]", "  n = exp(X)\n  return n")) == "2:3: 'n' is a dim of the program and cannot name a value\n");
  CHECK(diag_lines(wrap("X: f16[n]", "  return sum(X, axes=0)")) == "2:17: sum: unknown argument 'axes'; did you mean 'axis'?\n");
  CHECK(diag_lines(wrap("X: f16[n]", "  return reshape(X)")) == "2:10: reshape: missing argument 'shape'\n");
  CHECK(diag_lines(wrap("X: f16[n]", "  return exp(X, X)")) == "2:17: exp: too many arguments (takes at most 1)\n");
  CHECK(diag_lines(wrap("X: f16[n]", "  return reshape(X, [q])")) == "2:22: unknown dim 'q'\n");
  CHECK(diag_lines(wrap("X: f16[0]", "  return X")) == "1:18: dim 0 is not a positive integer\n");
}

TEST_CASE("shape errors point at the call", "[engine][shapes]") {
  CHECK(diag_lines(wrap("X: f16[n, d], W: f16[n, d]", "  return matmul(X, W)")) == "2:10: matmul: inner dims d and n differ\n");
  CHECK(diag_lines(wrap("X: f16[n], W: f16[d]", "  return X + W")) == "2:10: add: dims n and d cannot broadcast\n");
  CHECK(diag_lines(wrap("X: f16[n, d]", "  return sum(X, axis=2)")) == "2:10: sum: axis 2 out of range for rank 2\n");
  CHECK(diag_lines(wrap("X: f16[n, d]", "  return transpose(X, perm=[0, 0])")) ==
        "2:10: transpose: perm is not a permutation of 0..1 (entry 0)\n");
  CHECK(diag_lines(wrap("X: f16[n, d]", "  return reshape(X, [n, d/3])")) ==
        "2:10: reshape: cannot reshape [n, d] (n*d elements) into [n, d/3] (n*d/3 elements)\n");
  CHECK(diag_lines(wrap("X: f16[n, 6]", "  A, B, C, D = split(X, 4)\n  return A")) ==
        "2:16: split: dim 6 is not divisible into 4 parts\n");
  CHECK(diag_lines(wrap("X: f16[n, d]", "  A, B = split(X, 3)\n  return A")) ==
        "2:3: 'split' gives 3 values but 2 names are on the left of '='\n");
  CHECK(diag_lines(wrap("X: f16[n]", "  A = split(X, 0)\n  return A")) == "2:7: split: parts must be positive but is 0\n");
  CHECK(diag_lines(wrap("X: f16[n]", "  return matmul(X, X)")) == "2:10: matmul: operand 1 has rank 1 but matmul needs rank 2 or more\n");
  CHECK(diag_lines(wrap("A: f16[n, d], B: f16[m, d]", "  return concat(A, B, axis=-1)")) ==
        "2:10: concat: dims n and m differ on axis 0\n");
}

TEST_CASE("a failing statement does not cascade", "[engine][shapes]") {
  std::string text = wrap("X: f16[n, d], W: f16[n, d]",
                          "  Y = matmul(X, W)\n  Z = exp(Y) + Y\n  Q = sum(Z, axis=5)\n  return Q + Nope");
  CHECK(diag_lines(text) == "2:7: matmul: inner dims d and n differ\n5:14: undefined name 'Nope'\n");
}

TEST_CASE("shapes broadcast and dtypes widen", "[engine][shapes]") {
  CHECK(out_type(wrap("X: f16[n, d]", "  return X / sum(X, axis=-1)")) == "f16[n, d]");
  CHECK(out_type(wrap("X: f16[n, d]", "  return sum(X, axis=0, keepdims=false)")) == "f16[d]");
  CHECK(out_type(wrap("X: f16[n, d]", "  return mean(X, axis=-2)")) == "f16[1, d]");
  CHECK(out_type(wrap("X: f16[n, d], Y: bf16[n, d]", "  return X * Y")) == "f32[n, d]");
  CHECK(out_type(wrap("X: f16[n, d], Y: f32[d]", "  return X - Y")) == "f32[n, d]");
  CHECK(out_type(wrap("X: bf16[n, d]", "  return X * 0.5 + 1e-6")) == "bf16[n, d]");
  CHECK(out_type(wrap("X: f16[B, 1, n, d], W: f16[H, d, e]", "  return matmul(X, W)")) == "f16[B, H, n, e]");
  CHECK(out_type(wrap("X: f16[n, d], W: f16[d, e]", "  return X @ W")) == "f16[n, e]");
  CHECK(out_type(wrap("X: f16[a, b, c]", "  return transpose(X)")) == "f16[a, c, b]");
  CHECK(out_type(wrap("X: f16[a, b, c]", "  return transpose(X, perm=[2, 0, 1])")) == "f16[c, a, b]");
  CHECK(out_type(wrap("X: f16[n, d]", "  return reshape(X, [n, 2, d/2])")) == "f16[n, 2, d/2]");
  CHECK(out_type(wrap("X: f16[n, d]", "  return reshape(X, [d*n])")) == "f16[d*n]");
  CHECK(out_type(wrap("A: f16[n, d], B: f32[n, e]", "  return concat(A, B, axis=-1)")) == "f32[n, d+e]");
  CHECK(out_type(wrap("X: f16[n, 2*d]", "  A, B = split(X, 2, axis=-1)\n  return B")) == "f16[n, d]");
  CHECK(out_type(wrap("X: f16[n, d]", "  return softmax(X, axis=0)")) == "f16[n, d]");
  CHECK(out_type(wrap("X: f16[n, d]", "  return rms_norm(X, eps=1e-6)")) == "f16[n, d]");
  CHECK(out_type(wrap("X: f16[n, d]", "  return X / d")) == "f16[n, d]");
  // Symbolic reshape counts that cannot be decided are left to run time.
  CHECK(out_type(wrap("X: f16[n, d], Y: f16[a, b]", "  return reshape(X, [a, b])")) == "f16[a, b]");
}

TEST_CASE("multiple outputs are named", "[engine][shapes]") {
  Program p = only_program(wrap("X: f16[n, d]", "  Y = exp(X)\n  return Y, sum(X, axis=-1)"));
  REQUIRE(p.outputs.size() == 2);
  CHECK(p.value(p.outputs[0]).name == "Y");
  CHECK(p.value(p.outputs[1]).name == "out1");
  CHECK(signature(p) == "program p(X: f16[n, d]) -> (f16[n, d], f16[n, 1])");
  CHECK(p.dims == std::vector<std::string>{"n", "d"});
}

namespace {
// The ops of a program's computed values, in order ("transpose matmul").
std::string ops_of(const std::string& params, const std::string& body) {
  Program p = only_program(wrap(params, body));
  std::string out;
  for (const Value& v : p.values)
    if (v.op != Op::Input && v.op != Op::Const) out += (out.empty() ? "" : " ") + std::string(op_name(v.op));
  return out;
}
}  // namespace

TEST_CASE("PyTorch's spellings are the ops they mean", "[engine][names][spellings]") {
  const std::string x = "X: f32[n, d], W: f32[m, d], M: f32[n, d]";
  CHECK(ops_of(x, "  return X @ W.T") == "transpose matmul");
  CHECK(out_type(wrap("W: f32[m, d]", "  return W.T")) == "f32[d, m]");
  CHECK(ops_of("X: f32[b, n, d]", "  return X.mT") == "transpose");
  CHECK(ops_of(x, "  return softmax(X, dim=-1)") == "softmax");
  CHECK(out_type(wrap(x, "  return sum(X, dim=0, keepdim=false)")) == "f32[d]");
  // Powers as PyTorch computes them; others through powf.
  CHECK(ops_of(x, "  return X ** 2") == "square");
  CHECK(ops_of(x, "  return X ** 3") == "square mul");
  CHECK(ops_of(x, "  return X ** 0.5 + X ** -0.5") == "sqrt rsqrt add");
  CHECK(ops_of(x, "  return X ** -1") == "div");
  CHECK(ops_of(x, "  return pow(X, 1.5) + pow(X, M)") == "pow pow add");
  CHECK(ops_of(x, "  return -X ** 2") == "square neg");  // ** binds tighter than the minus, as in Python
  CHECK(ops_of(x, "  return erf(X) * maximum(X, M) - minimum(X, 0)") == "erf maximum mul minimum sub");
  // Comparisons: a < b as b > a; where selects, so a masked -inf never meets a 0 in a product.
  CHECK(ops_of(x, "  return (X > 0) + (X <= M) + (X == M) + (X != 1)") == "gt ge add eq add ne add");
  CHECK(ops_of(x, "  return where(X > 0, X, 0)") == "gt mask");
  CHECK(ops_of(x, "  return where(M == 0, -inf, X)") == "eq mask eq mask add");
  CHECK(ops_of(x, "  return clamp(X, min=-1, max=1) + clamp(X, max=M)") == "maximum minimum minimum add");
}

TEST_CASE("PyTorch spellings the language does not have say what to write", "[engine][names][spellings]") {
  const std::string x = "X: f32[b, n, d]";
  CHECK(diag_lines(wrap(x, "  return X.T")) ==
        "2:10: '.T' transposes a 2-D value, and this one has rank 3; write transpose(x, perm=[...]) or '.mT' for the last two dims\n");
  CHECK(diag_lines(wrap(x, "  return X.H")) == "2:12: unknown attribute '.H'; values have '.T' (a 2-D transpose) and '.mT' (the last two dims)\n");
  CHECK(diag_lines(wrap(x, "  return X > 0 > X")) == "2:16: comparisons do not chain: compare two values at a time and multiply the results\n");
  CHECK(diag_lines(wrap(x, "  return clamp(X)")) == "2:10: clamp: give min=, max= or both\n");
  CHECK(diag_lines(wrap(x, "  return where(X, X)")) == "2:10: where: missing argument 'other'\n");
  CHECK(diag_lines(wrap(x, "  return wher(X, X, X)")) == "2:10: unknown op 'wher'; did you mean 'where'?\n");
  // where, clamp and pow bind their arguments as every op does (one binder).
  CHECK(diag_lines(wrap(x, "  return where(X > 0, X, othr=0)")) == "2:26: where: unknown argument 'othr'; did you mean 'other'?\n");
  CHECK(diag_lines(wrap(x, "  return where(X > 0, input=X, 0)")) == "2:32: where: positional argument after a keyword argument\n");
  CHECK(diag_lines(wrap(x, "  return clamp(X, min=0, min=1)")) == "2:26: clamp: argument 'min' given twice\n");
  CHECK(diag_lines(wrap(x, "  return sum(X, dim=0, axis=1)")) == "2:24: sum: argument 'axis' given twice\n");
  CHECK(diag_lines(wrap(x, "  return sum(X, keepdims=1, keepdim=1)")) == "2:29: sum: argument 'keepdims' given twice\n");
  CHECK(diag_lines(wrap(x, "  return reshape(X, [n > 1, d])")) == "2:22: '>' cannot appear in a dim expression\n");
  CHECK(diag_lines(wrap("X: f32[n ** 2]", "  return X")) == "1:18: '**' cannot appear in a dim expression\n");
}
