// defer_row_scales: a per-row scale of a matmul's left operand moves past the matmul (attention's
// normalization after its matmul with V), and the program still computes what it did.
#include <catch2/catch.hpp>

#include "../interp_helpers.h"
#include "engine/interp/tensor.h"
#include "engine/ir/defer_row_scales.h"
#include "engine/ir/print.h"

using namespace prism;

namespace {

void check_same(const Program& a, const Program& b, const DimBindings& dims) { CHECK(test::programs_apart(a, b, dims, 9) <= 1); }

// The op of the value output 0 is.
Op output_op(const Program& p) { return p.value(p.outputs.at(0)).op; }

}  // namespace

TEST_CASE("defer_row_scales: attention's softmax normalizes after the matmul with V", "[ir][defer]") {
  const Program p = lower_composites(test::only_program(R"(program sdpa(Q: f32[B, q, e], K: f32[B, s, e], V: f32[B, s, e]) {
  S = matmul(Q, transpose(K, perm=[0, 2, 1])) / sqrt(e)
  return matmul(softmax(S), V)
})"));
  const std::optional<Program> r = defer_row_scales(p);
  REQUIRE(r);
  INFO(print_program(*r));
  check_same(p, *r, {{"B", 2}, {"q", 3}, {"s", 8}, {"e", 4}});
  // The output divides a matmul of exp(S - max) by the row sums; no matmul reads a division.
  const Value& out = r->value(r->outputs[0]);
  CHECK(out.op == Op::Div);
  CHECK(r->value(out.operands[0]).op == Op::Matmul);
  CHECK(r->value(out.operands[1]).op == Op::Sum);
  for (const Value& v : r->values)
    if (v.op == Op::Matmul) CHECK(r->value(v.operands[0]).op != Op::Div);
  CHECK(r->value(r->outputs[0]).name == p.value(p.outputs[0]).name);
}

TEST_CASE("defer_row_scales: row gains and scalars move, full-shape factors and right operands stay", "[ir][defer]") {
  // A per-row gain on either side of a mul, then a scalar: both move past the matmul.
  const Program gains = lower_composites(test::only_program(R"(program g(X: f32[n, d], r: f32[n, 1], W: f32[d, m]) {
  return matmul((r * X) * 0.5, W)
})"));
  const std::optional<Program> moved = defer_row_scales(gains);
  REQUIRE(moved);
  INFO(print_program(*moved));
  check_same(gains, *moved, {{"n", 3}, {"d", 5}, {"m", 4}});
  CHECK(output_op(*moved) == Op::Mul);
  for (const Value& v : moved->values)
    if (v.op == Op::Matmul) CHECK(moved->value(v.operands[0]).op == Op::Input);

  // A factor that varies along the contraction, and a scale of the right operand: unchanged.
  const Program full = lower_composites(test::only_program(R"(program f(X: f32[n, d], Y: f32[n, d], W: f32[d, m], c: f32[d, 1]) {
  return matmul(X / Y, W) + matmul(X, W / c)
})"));
  CHECK_FALSE(defer_row_scales(full));
}
