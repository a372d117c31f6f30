// one_pass_variance: a sum of squared deviations from the mean becomes sum(x^2) - k m^2, and the
// program still computes what it did; sums of other shapes stay as they are.
#include <catch2/catch.hpp>

#include "../interp_helpers.h"
#include "engine/ir/one_pass_variance.h"
#include "engine/ir/print.h"

using namespace prism;

namespace {

// Whether some sum reads x * x (or square(x)) of an input x directly: the one-pass sum of squares.
bool sums_input_squares(const Program& p) {
  for (const Value& v : p.values) {
    if (v.op != Op::Sum) continue;
    const Value& sq = p.value(v.operands[0]);
    const bool square = sq.op == Op::Square || (sq.op == Op::Mul && sq.operands[0] == sq.operands[1]);
    if (square && p.value(sq.operands[0]).op == Op::Input) return true;
  }
  return false;
}

// Whether some sum still squares a difference.
bool sums_squared_differences(const Program& p) {
  for (const Value& v : p.values) {
    if (v.op != Op::Sum) continue;
    const Value& sq = p.value(v.operands[0]);
    if ((sq.op == Op::Mul || sq.op == Op::Square) && p.value(sq.operands[0]).op == Op::Sub) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("one_pass_variance: nn.LayerNorm's variance sums the squares of its input", "[ir][variance]") {
  const Program p = lower_composites(test::only_program(R"(program ln(X: f32[n, d], gamma: f32[d], beta: f32[d], W: f32[m, d], b: f32[m]) {
  mu = mean(X, axis=-1)
  xc = X - mu
  var = mean(xc * xc, axis=-1)
  return matmul(xc / sqrt(var + 1e-5) * gamma + beta, transpose(W)) + b
})"));
  const std::optional<Program> r = one_pass_variance(p);
  REQUIRE(r);
  INFO(print_program(*r));
  CHECK(test::programs_apart(p, *r, {{"n", 3}, {"d", 16}, {"m", 4}}, 5) <= 1);
  CHECK(sums_input_squares(*r));
  CHECK_FALSE(sums_squared_differences(*r));
  // The centred values stay for the normalization; the outputs keep their names.
  CHECK(r->value(r->outputs[0]).name == p.value(p.outputs[0]).name);
  CHECK(r->values.size() > p.values.size());
}

TEST_CASE("one_pass_variance: square() and two separate subtractions, over any axis", "[ir][variance]") {
  const Program squared = lower_composites(test::only_program(R"(program gn(X: f32[N, G, k]) {
  return mean(square(X - mean(X, axis=-1)), axis=-1)
})"));
  const std::optional<Program> a = one_pass_variance(squared);
  REQUIRE(a);
  CHECK(test::programs_apart(squared, *a, {{"N", 2}, {"G", 3}, {"k", 10}}, 3) <= 1);
  CHECK(sums_input_squares(*a));

  const Program twice = lower_composites(test::only_program(R"(program cols(X: f32[n, d]) {
  return sum((X - mean(X, axis=0)) * (X - mean(X, axis=0)), axis=0)
})"));
  const std::optional<Program> b = one_pass_variance(twice);
  REQUIRE(b);
  CHECK(test::programs_apart(twice, *b, {{"n", 7}, {"d", 3}}, 3) <= 1);
  CHECK_FALSE(sums_squared_differences(*b));
}

TEST_CASE("one_pass_variance: deviations from anything but the same axis's mean stay", "[ir][variance]") {
  // The mean of the other axis; a shift that is no mean; a mean divided by the wrong count; the
  // product of two different deviations.
  for (const char* text : {
           "program a(X: f32[n, d]) {\n  return sum(square(X - mean(X, axis=0)), axis=-1)\n}\n",
           "program b(X: f32[n, d], c: f32[n, 1]) {\n  return sum(square(X - c), axis=-1)\n}\n",
           "program c(X: f32[n, d]) {\n  return sum(square(X - sum(X, axis=-1) / 2), axis=-1)\n}\n",
           "program e(X: f32[n, d], Y: f32[n, d]) {\n  return sum((X - mean(X, axis=-1)) * (Y - mean(Y, axis=-1)), axis=-1)\n}\n",
       }) {
    INFO(text);
    CHECK_FALSE(one_pass_variance(lower_composites(test::only_program(text))));
  }
}
