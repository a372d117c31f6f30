// The one-pass variance in the search: seeded, proved by sum-centred-square, and judged by the
// floating-point check on mean-shifted rows (NumericCheck::unstable): kept at bf16, where the
// dtype cannot resolve a mean large enough to make it cancel, and rejected at f32, where it can.
#include <catch2/catch.hpp>

#include "engine/ir/drop_casts.h"
#include "engine/ir/one_pass_variance.h"
#include "engine/search/dag.h"
#include "engine/search/search.h"
#include "engine/search/verify.h"
#include "search_helpers.h"

using namespace prism;
using namespace prism::search;

namespace {

std::string row_variance(const std::string& dtype) {
  return "program var(X: " + dtype + "[n, d]) {\n  mu = mean(X, axis=-1)\n  xc = X - mu\n  return mean(xc * xc, axis=-1)\n}\n";
}

}  // namespace

TEST_CASE("variance: GroupNorm's statistics stream each group once at bf16, twice at f32", "[search][variance][layers]") {
  // Stored at bf16, with sums at f32 as kernels keep them, both sums run in one loop; at f32 the
  // one-pass form cancels on mean-shifted rows and only the two-pass forms are offered.
  std::string text = test::layer_text("groupnorm_stats");
  for (const char* dtype : {"f32", "bf16"}) {
    INFO(dtype);
    text.replace(text.find("X: ") + 3, text.find('[', text.find("X: ")) - text.find("X: ") - 3, dtype);
    SearchLimits limits;
    limits.threads = 2;
    limits.budget_s = 120;
    const SearchResult r = search_program(test::lowered_text(text, "groupnorm_stats"), limits);
    REQUIRE(r.stats.stop_reason == SearchStop::Complete);
    const Candidate* loop = nullptr;
    for (const Candidate& c : r.candidates)
      if (c.kernels == 1 && c.summary.find("loop F1 over k, sum+sum accumulated") != std::string::npos) loop = &c;
    if (std::string(dtype) == "f32") {
      CHECK_FALSE(loop);
      for (const Candidate& c : r.candidates) CHECK(c.proof.find("sum-centred-square") == std::string::npos);
    } else {
      REQUIRE(loop);
      // Proved by the one-pass axiom, output by output (the mean's proof needs none).
      CHECK(loop->proof.find("sum-centred-square") != std::string::npos);
    }
    // The two-pass forms are there: nothing the program as written gave is lost.
    bool two_pass = false;
    for (const Candidate& c : r.candidates)
      if (c.summary.find("sum, div, sub, mul, sum") != std::string::npos) two_pass = true;
    CHECK(two_pass);
  }
}

TEST_CASE("variance: mean-shifted rows reject the one-pass form at f32 and a form equal only on centred data", "[search][variance]") {
  for (const char* dtype : {"f32", "bf16"}) {
    INFO(dtype);
    const Program p = drop_casts(test::lowered_text(row_variance(dtype), "var"));
    const std::vector<DagValue> leaves = dag_leaves(p);
    NumericCheck check(p);
    const std::optional<Dag> two = program_dag(p, leaves);
    const std::optional<Program> one_program = one_pass_variance(p);
    REQUIRE(one_program);
    const std::optional<Dag> one = program_dag(*one_program, leaves);
    // mean(X * X) is the variance only where the mean is 0: the seeded inputs' mean is small, so
    // the usual check (absolute below 1) passes it; shifted, it is far off.
    const std::optional<Dag> raw = program_dag(
        drop_casts(test::lowered_text("program var(X: " + std::string(dtype) + "[n, d]) {\n  return mean(X * X, axis=-1)\n}\n", "var")),
        leaves);
    REQUIRE(two);
    REQUIRE(one);
    REQUIRE(raw);
    CHECK(check.dag_matches(*two, nullptr));
    CHECK(check.dag_matches(*one, nullptr));
    CHECK(check.dag_matches(*raw, nullptr));
    CHECK_FALSE(check.unstable(*two, nullptr));
    const std::optional<std::string> raw_why = check.unstable(*raw, nullptr);
    CHECK(raw_why);
    const std::optional<std::string> one_why = check.unstable(*one, nullptr);
    INFO(one_why.value_or("stable"));
    if (std::string(dtype) == "f32") {
      REQUIRE(one_why);
      CHECK(one_why->find("on mean-shifted rows, output 0 is off by") != std::string::npos);
    } else {
      CHECK_FALSE(one_why);
    }
  }
}

TEST_CASE("variance: a row variance loops over the row or splits it over blocks; the one-pass families come from the seed alone",
          "[search][variance]") {
  SearchLimits limits;
  limits.threads = 2;
  limits.budget_s = 120;
  const SearchResult r = search_program(test::lowered_text(row_variance("bf16"), "var"), limits);
  REQUIRE(r.stats.stop_reason == SearchStop::Complete);
  int one_pass = 0;
  bool loop = false, split = false;
  for (const Candidate& c : r.candidates) {
    if (c.proof.find("sum-centred-square") == std::string::npos) continue;
    ++one_pass;
    loop = loop || (c.kernels == 1 && c.summary.find("loop F1 over d, sum+sum accumulated") != std::string::npos);
    // The row split over blocks: both sums' partials, combined by a second kernel.
    split = split || (c.kernels == 2 && c.summary.find("reduces d") != std::string::npos);
  }
  CHECK(loop);
  CHECK(split);
  // The seed's plans (a loop, grids over n and d, and both): a handful, not every small DAG
  // equal to it (eg::proof_only keeps the rule out of the expression e-graph).
  CHECK(one_pass >= 4);
  CHECK(one_pass <= 16);
}

TEST_CASE("variance: at f32 no family computes a row variance in one pass", "[search][variance]") {
  SearchLimits limits;
  limits.threads = 2;
  limits.budget_s = 120;
  const SearchResult r = search_program(test::lowered_text(row_variance("f32"), "var"), limits);
  REQUIRE(r.stats.stop_reason == SearchStop::Complete);
  CHECK_FALSE(r.candidates.empty());
  for (const Candidate& c : r.candidates) CHECK(c.proof.find("sum-centred-square") == std::string::npos);
}
