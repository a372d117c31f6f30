// regroup_layouts: a reshape moves across the transpose beside it where the chain of layout ops
// then takes a form kernel cuts read, and the program still computes exactly what it did.
#include <catch2/catch.hpp>

#include "../interp_helpers.h"
#include "engine/ir/print.h"
#include "engine/ir/regroup_layouts.h"

using namespace prism;

namespace {

// The layout ops the output reads, from the output down: "reshape transpose".
std::string chain(const Program& p) {
  std::string out;
  for (int id = p.outputs.at(0); p.value(id).op == Op::Reshape || p.value(id).op == Op::Transpose; id = p.value(id).operands[0])
    out += std::string(out.empty() ? "" : " ") + op_name(p.value(id).op);
  return out;
}

Program lowered(const std::string& text) { return lower_composites(test::only_program(text)); }

}  // namespace

TEST_CASE("regroup_layouts: grouped attention's values as heads with a group axis are one reshape, then a transpose",
          "[ir][regroup]") {
  // V's rows [s, k·e] as heads [k, s, e] (the head split), then [k, 1, s, e] beside the queries'
  // groups: the unit axis goes into the first reshape.
  const Program p = lowered(R"(program v(X: f32[s, d], W: f32[k * e, d]) {
  heads = transpose(reshape(exp(X) @ transpose(W), [s, k, e]), perm=[1, 0, 2])
  return reshape(heads, [k, 1, s, e])
})");
  const Program r = regroup_layouts(p);
  INFO(print_program(r));
  CHECK(chain(p) == "reshape transpose reshape");
  CHECK(chain(r) == "transpose reshape");
  CHECK(test::programs_apart(p, r, {{"s", 5}, {"d", 6}, {"k", 2}, {"e", 3}}, 5) <= 1);
  CHECK(r.value(r.outputs[0]).name == p.value(p.outputs[0]).name);
}

TEST_CASE("regroup_layouts: grouped attention's output merged to heads and then to rows is a transpose, then one reshape",
          "[ir][regroup]") {
  // [k, g, s, e] merged to heads [k·g, s, e], moved to [s, k·g, e], merged to rows [s, k·g·e].
  const Program p = lowered(R"(program o(A: f32[k, g, s, e]) {
  return reshape(transpose(reshape(exp(A), [k * g, s, e]), perm=[1, 0, 2]), [s, k * g * e])
})");
  const Program r = regroup_layouts(p);
  INFO(print_program(r));
  CHECK(chain(r) == "reshape transpose");
  CHECK(test::programs_apart(p, r, {{"k", 2}, {"g", 3}, {"s", 4}, {"e", 5}}, 5) <= 1);
}

TEST_CASE("regroup_layouts: a chain whose groups the transpose reorders, or that another value reads, stays", "[ir][regroup]") {
  // The transpose swaps the two halves of the axis the outer reshape merges back: no regrouping
  // keeps the order, and the chain is as it was.
  const Program swapped = lowered(R"(program t(A: f32[n, m]) {
  return reshape(transpose(reshape(exp(A), [n, 2, m / 2]), perm=[0, 2, 1]), [n, m])
})");
  CHECK(print_program(regroup_layouts(swapped)) == print_program(swapped));
  const Program read_twice = lowered(R"(program u(A: f32[k, g, s, e]) {
  h = reshape(exp(A), [k * g, s, e])
  return reshape(transpose(h, perm=[1, 0, 2]), [s, k * g * e]) + reshape(h, [s, k * g * e])
})");
  CHECK(print_program(regroup_layouts(read_twice)) == print_program(read_twice));
}
