// The op table (ir/ops.h): one row per op in Op order, and what every stage reads from it. The
// elementwise rows are checked here against double-precision math in the interpreter and in the
// language; the code generators, eager baselines, e-graph and search check them in their own
// tests, looping over the table (so a new row is tested everywhere without a new test).
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "engine/error.h"
#include "engine/ir/ops.h"
#include "interp_helpers.h"

using namespace prism;

namespace {

// The op's meaning in double precision, written independently of the table's formula.
double exact(Op op, double x, double y) {
  switch (op) {
    case Op::Neg: return -x;
    case Op::Exp: return std::exp(x);
    case Op::Log: return std::log(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Rsqrt: return 1 / std::sqrt(x);
    case Op::Square: return x * x;
    case Op::Silu: return x / (1 + std::exp(-x));
    case Op::Gelu: return x / 2 * (1 + std::erf(x / std::sqrt(2.0)));
    case Op::GeluTanh: return x / 2 * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case Op::Relu: return x < 0 ? 0 : x;
    case Op::Tanh: return std::tanh(x);
    case Op::Sigmoid: return 1 / (1 + std::exp(-x));
    case Op::Abs: return std::fabs(x);
    case Op::Erf: return std::erf(x);
    case Op::Add: return x + y;
    case Op::Sub: return x - y;
    case Op::Mul: return x * y;
    case Op::Div: return x / y;
    case Op::Pow: return std::pow(x, y);
    case Op::Minimum: return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y);
    case Op::Maximum: return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y);
    case Op::Gt: return x > y;
    case Op::Ge: return x >= y;
    case Op::Eq: return x == y;
    case Op::Ne: return x != y;
    case Op::Mask: return x != 0 ? y : 0;
    default: return NAN;
  }
}

const std::vector<float> kXs = {-30.0f, -4.5f, -1.0f, -0.25f, -0.0f, 0.0f, 1e-3f, 0.5f, 1.0f, 3.0f, 12.0f};

}  // namespace

TEST_CASE("ops: one row per op, in Op order, with what its class needs", "[ops]") {
  REQUIRE(op_table().size() == kOpCount);
  std::set<std::string> names;
  for (size_t i = 0; i < op_table().size(); ++i) {
    const OpInfo& row = op_table()[i];
    INFO(row.name);
    CHECK(size_t(row.op) == i);
    CHECK(names.insert(row.name).second);
    const bool elementwise = row.cls == OpClass::Unary || row.cls == OpClass::Binary;
    CHECK(is_elementwise(row.op) == elementwise);
    CHECK((row.c_expr != nullptr) == elementwise);
    CHECK((row.unary != nullptr) == (row.cls == OpClass::Unary));
    CHECK((row.binary != nullptr) == (row.cls == OpClass::Binary));
    if (row.cls == OpClass::Unary) CHECK(row.arity == 1);
    if (row.cls == OpClass::Binary) CHECK(row.arity == 2);
    if (elementwise) CHECK(row.flops == (row.op == Op::Cast ? 0 : 1));
    if (row.op != Op::Input && row.op != Op::Const && row.op != Op::Cast) CHECK(op_from_name(row.name) == row.op);
  }
  CHECK_FALSE(op_from_name("input"));
  CHECK_FALSE(op_from_name("cast"));  // a cast is called by its dtype's name
  for (const char* dtype : {"f32", "f16", "bf16"}) CHECK(op_from_name(dtype) == Op::Cast);
  CHECK_FALSE(op_from_name("erfc"));
  CHECK(ops_of_class(OpClass::Reduce) == std::vector<Op>{Op::Sum, Op::Max, Op::Rms});
  for (Op op : {Op::Tanh, Op::Sigmoid, Op::Abs}) CHECK(op_class(op) == OpClass::Unary);
  CHECK(op_flops(Op::Matmul, {4, 8}, {4, 16}) == 2.0 * 4 * 8 * 16);
  CHECK(op_flops(Op::Sum, {4, 1}, {4, 16}) == 64);
  CHECK(op_flops(Op::Tanh, {4, 16}, {4, 16}) == 64);
  CHECK(op_flops(Op::Reshape, {64}, {4, 16}) == 0);
}

TEST_CASE("ops: every elementwise formula is its op's meaning, in the interpreter and through the language", "[ops][interp]") {
  for (const OpInfo& row : op_table()) {
    if (!is_elementwise(row.op) || row.op == Op::Cast) continue;  // test_casts.cpp
    INFO(row.name << " = " << row.c_expr);
    const bool unary = row.cls == OpClass::Unary;
    const std::string text = unary ? std::string("program p(X: f32[n]) {\n  return ") + row.name + "(X)\n}\n"
                                   : std::string("program p(X: f32[n], Y: f32[n]) {\n  return ") + row.name + "(X, Y)\n}\n";
    Tensor x = test::f32({int64_t(kXs.size())}, kXs), y = x;
    for (float& v : y.data) v = v * 0.5f + 1.25f;  // never zero: a quotient stays finite
    Tensor got = test::run_text(text, {{"n", int64_t(kXs.size())}}, {{"X", x}, {"Y", y}}).at(0);
    for (size_t i = 0; i < kXs.size(); ++i) {
      const double want = exact(row.op, kXs[i], y.data[i]);
      const float direct = unary ? row.unary(kXs[i]) : row.binary(kXs[i], y.data[i]);
      INFO("x = " << kXs[i] << ", y = " << y.data[i] << ": want " << want << ", got " << got.data[i]);
      CHECK(std::isnan(got.data[i]) == std::isnan(want));
      CHECK((std::isnan(direct) ? std::isnan(got.data[i]) : direct == got.data[i]));
      if (!std::isnan(want) && !std::isinf(want)) CHECK(std::fabs(got.data[i] - want) <= 2e-6 * std::max(1.0, std::fabs(want)));
      if (std::isinf(want)) CHECK(got.data[i] == float(want));
    }
  }
}

TEST_CASE("ops: tanh, sigmoid and abs are called as PyTorch layers call them", "[ops][interp]") {
  // The tanh form of GELU (torch.nn.GELU(approximate="tanh")) and a sigmoid-gated unit.
  const char* text = R"(program p(X: f32[n, d], W: f32[d, d]) {
  H = matmul(X, W)
  G = 0.5 * H * (1 + tanh(0.7978845608 * (H + 0.044715 * H * H * H)))
  return G * sigmoid(H), abs(X)
}
)";
  DimBindings b{{"n", 2}, {"d", 3}};
  Tensor x = test::f32({2, 3}, {-2, -1, -0.5f, 0.5f, 1, 2});
  Tensor w = test::f32({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  std::vector<Tensor> out = test::run_text(text, b, {{"X", x}, {"W", w}});
  for (size_t i = 0; i < x.data.size(); ++i) {
    const double h = x.data[i];
    const double g = 0.5 * h * (1 + std::tanh(0.7978845608 * (h + 0.044715 * h * h * h)));
    CHECK(out[0].data[i] == Approx(g / (1 + std::exp(-h))).epsilon(1e-5));
    CHECK(out[1].data[i] == std::fabs(x.data[i]));
  }
}

TEST_CASE("ops: an op's arity is checked where it is called", "[ops][lang]") {
  CHECK_THROWS_AS(test::only_program("program p(X: f32[n]) {\n  return tanh(X, X)\n}\n"), std::runtime_error);
  CHECK_THROWS_AS(test::only_program("program p(X: f32[n]) {\n  return sigmoid()\n}\n"), std::runtime_error);
  CHECK_NOTHROW(test::only_program("program p(X: f32[n]) {\n  return abs(-X) + sigmoid(X) * tanh(X)\n}\n"));
}
