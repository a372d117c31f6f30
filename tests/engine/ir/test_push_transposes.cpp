// push_transposes: transposes of computed values move down to the inputs, and the program still
// computes exactly what it did.
#include <catch2/catch.hpp>

#include "../interp_helpers.h"
#include "engine/interp/tensor.h"
#include "engine/ir/print.h"
#include "engine/ir/push_transposes.h"

using namespace prism;

namespace {

void check_same(const Program& a, const Program& b, const DimBindings& dims) { CHECK(test::programs_apart(a, b, dims, 5) <= 1); }

int count(const Program& p, Op op) {
  int n = 0;
  for (const Value& v : p.values) n += v.op == op;
  return n;
}

}  // namespace

TEST_CASE("push_transposes: a transpose of normed keys moves to the input, the gain becomes a reshape", "[ir][transpose]") {
  const Program p = lower_composites(test::only_program(R"(program qk(Q: f32[B, q, e], K: f32[B, s, e], gk: f32[e]) {
  Kn = rms_norm(K, eps=1e-6) * gk
  return matmul(Q, transpose(Kn, perm=[0, 2, 1]))
})"));
  const Program r = push_transposes(p);
  INFO(print_program(r));
  check_same(p, r, {{"B", 2}, {"q", 3}, {"s", 5}, {"e", 4}});
  // Every transpose reads an input; the gain is reshaped to [1, e, 1]; the sum runs over axis 1.
  for (const Value& v : r.values)
    if (v.op == Op::Transpose || v.op == Op::Reshape) CHECK(r.value(v.operands[0]).op == Op::Input);
  CHECK(count(r, Op::Transpose) == 1);
  CHECK(count(r, Op::Reshape) == 1);
  bool summed_over_e = false;
  for (const Value& v : r.values) summed_over_e |= v.op == Op::Sum && v.attrs.axis == 1;
  CHECK(summed_over_e);
  CHECK(r.inputs.size() == p.inputs.size());
}

TEST_CASE("push_transposes: what cannot move stays, and a program without one is unchanged", "[ir][transpose]") {
  // A transpose of a matmul (it would swap the operands) stays as it is.
  const Program mm = lower_composites(test::only_program(R"(program t(A: f32[n, k], B: f32[k, m]) {
  return transpose(matmul(A, B)) * 2
})"));
  const Program r = push_transposes(mm);
  CHECK(print_program(r) == print_program(mm));
  check_same(mm, r, {{"n", 3}, {"k", 4}, {"m", 5}});
  // An elementwise op of two inputs: each input is read transposed.
  const Program ok = lower_composites(test::only_program(R"(program u(X: f32[n, d], W: f32[n, d]) {
  return transpose(exp(X) - W)
})"));
  const Program moved = push_transposes(ok);
  check_same(ok, moved, {{"n", 3}, {"d", 4}});
  CHECK(count(moved, Op::Transpose) == 2);  // transpose(X) and transpose(W)
}

TEST_CASE("push_transposes: a transpose of a transpose is one, and two that cancel are none", "[ir][transpose]") {
  // BERT's keys: the head split's transpose, then `.mT` in the scores: one view of the reshape.
  const Program keys = lower_composites(test::only_program(R"(program k(X: f32[b, s, d], W: f32[d, d], Q: f32[b, h, s, e]) {
  K = transpose(reshape(X @ W, [b, s, h, e]), perm=[0, 2, 1, 3])
  return Q @ transpose(K, perm=[0, 1, 3, 2])
})"));
  const Program r = push_transposes(keys);
  INFO(print_program(r));
  check_same(keys, r, {{"b", 2}, {"s", 3}, {"d", 8}, {"h", 2}, {"e", 4}});
  REQUIRE(count(r, Op::Transpose) == 1);
  for (const Value& v : r.values)
    if (v.op == Op::Transpose) {
      CHECK(v.attrs.perm == std::vector<int>{0, 2, 3, 1});
      CHECK(r.value(v.operands[0]).op == Op::Reshape);
    }
  // A transpose undone: its readers read the value itself; an output keeps its transposes.
  const Program undone = lower_composites(test::only_program(R"(program u(A: f32[n, d], B: f32[n, d]) {
  T = transpose(transpose(A * 2)) + B
  return T
})"));
  const Program none = push_transposes(undone);
  INFO(print_program(none));
  check_same(undone, none, {{"n", 3}, {"d", 4}});
  CHECK(count(none, Op::Transpose) == 0);
  const Program returned = lower_composites(test::only_program(R"(program o(A: f32[n, d]) {
  return transpose(transpose(A * 2))
})"));
  check_same(returned, push_transposes(returned), {{"n", 3}, {"d", 4}});
}

TEST_CASE("push_transposes: a transpose of an input with a unit axis added is that reshape of the input's transpose",
          "[ir][transpose]") {
  // Grouped attention's cached keys at [k, 1, s, e], read as `.mT`: one view of K for a load.
  const Program p = lower_composites(test::only_program(R"(program g(Q: f32[k, g, n, e], K: f32[k, s, e]) {
  return Q @ transpose(reshape(K, [k, 1, s, e]), perm=[0, 1, 3, 2])
})"));
  const Program r = push_transposes(p);
  INFO(print_program(r));
  check_same(p, r, {{"k", 2}, {"g", 3}, {"n", 4}, {"s", 5}, {"e", 6}});
  const Value& read = r.value(r.value(r.outputs[0]).operands[1]);
  CHECK(read.op == Op::Reshape);
  CHECK(r.value(read.operands[0]).op == Op::Transpose);
  CHECK(r.value(r.value(read.operands[0]).operands[0]).op == Op::Input);
}
