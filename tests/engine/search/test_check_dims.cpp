// The dims the search's checks run at (check_dims.h): distinct per dim, divisible by the check's
// grid sizes, and small where a dim only indexes in parallel.
#include <catch2/catch.hpp>

#include "engine/search/check_dims.h"
#include "search_helpers.h"

using namespace prism;

TEST_CASE("check dims: attention's batch and heads run small, every dim distinct and divisible", "[search][check-dims]") {
  const Program attention = test::lowered_text(
      "program a(Q: f32[b, h, s, e], K: f32[b, h, s, e], V: f32[b, h, s, e], M: f32[b, h, s, s]) {\n"
      "  return softmax(Q @ transpose(K, perm=[0, 1, 3, 2]) * 0.25 + M, axis=-1) @ V\n}\n",
      "a");
  CHECK(search::parallel_dims(attention) == std::set<std::string>{"b", "h"});
  CHECK(search::check_dims(attention) == DimBindings{{"b", 6}, {"h", 18}, {"s", 12}, {"e", 24}});
  CHECK(search::fingerprint_dims(attention) == DimBindings{{"b", 4}, {"h", 8}, {"s", 12}, {"e", 24}});

  // Heads merged into the rows' width (h in h*e) and a reshape's operand are no parallel dims;
  // nor is a reduced or contracted one. The projection's columns are.
  const Program merged = test::lowered_text(
      "program m(A: f32[n, h, e], W: f32[h * e, d]) {\n  return rms_norm(reshape(A, [n, h * e])) @ W\n}\n", "m");
  CHECK(search::parallel_dims(merged) == std::set<std::string>{"d"});
  CHECK(search::check_dims(merged) == DimBindings{{"n", 12}, {"h", 24}, {"e", 36}, {"d", 6}});
}
