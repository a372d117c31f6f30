// The one-pass variance in the search: seeded, proved by sum-centred-square, and judged by the
// numeric check on inputs whose mean is large against their spread.
#include <catch2/catch.hpp>

#include "engine/ir/one_pass_variance.h"
#include "engine/search/dag.h"
#include "engine/search/search.h"
#include "engine/search/verify.h"
#include "search_helpers.h"

using namespace prism;
using namespace prism::search;

namespace {

const char* kRowVariance = R"(program var(X: f32[n, d]) {
  mu = mean(X, axis=-1)
  xc = X - mu
  return mean(xc * xc, axis=-1)
})";

}  // namespace

TEST_CASE("variance: GroupNorm's statistics stream each group once, both sums in one loop", "[search][variance][layers]") {
  // As written (f32), and stored at bf16: kernels accumulate at f32, so the one-pass form passes
  // the offset check there too.
  std::string text = test::layer_text("groupnorm_stats");
  for (const char* dtype : {"f32", "bf16"}) {
    INFO(dtype);
    text.replace(text.find("X: ") + 3, text.find('[', text.find("X: ")) - text.find("X: ") - 3, dtype);
    SearchLimits limits;
    limits.threads = 2;
    limits.budget_s = 120;
    const SearchResult r = search_program(test::lowered_text(text, "groupnorm_stats"), limits);
    REQUIRE(r.stats.stop_reason == "complete");
    const Candidate* loop = nullptr;
    for (const Candidate& c : r.candidates)
      if (c.kernels == 1 && c.summary.find("loop F1 over k, sum+sum accumulated") != std::string::npos) loop = &c;
    REQUIRE(loop);
    // Proved by the one-pass axiom, output by output (the mean's proof needs none).
    CHECK(loop->proof.find("sum-centred-square") != std::string::npos);
    // The two-pass forms are there too: nothing the program as written gave is lost.
    bool two_pass = false;
    for (const Candidate& c : r.candidates)
      if (c.summary.find("sum, div, sub, mul, sum") != std::string::npos) two_pass = true;
    CHECK(two_pass);
  }
}

TEST_CASE("variance: the offset check passes the one-pass form and rejects a form equal only on centred data", "[search][variance]") {
  const Program p = test::lowered_text(kRowVariance, "var");
  const std::vector<DagValue> leaves = dag_leaves(p);
  NumericCheck check(p);
  const std::optional<Dag> two = program_dag(p, leaves);
  const std::optional<Program> one_program = one_pass_variance(p);
  REQUIRE(one_program);
  const std::optional<Dag> one = program_dag(*one_program, leaves);
  // mean(X * X) is the variance only where the mean is 0: the inputs' mean is small, so the
  // usual check (absolute below 1) passes it; moved by 8 it is 64 against 0.02.
  const std::optional<Dag> raw = program_dag(test::lowered_text("program var(X: f32[n, d]) {\n  return mean(X * X, axis=-1)\n}\n", "var"), leaves);
  REQUIRE(two);
  REQUIRE(one);
  REQUIRE(raw);
  CHECK(check.dag_matches(*two, nullptr));
  CHECK(check.dag_matches_offset(*two, nullptr));
  CHECK(check.dag_matches(*one, nullptr));
  CHECK(check.dag_matches_offset(*one, nullptr));
  CHECK(check.dag_matches(*raw, nullptr));
  CHECK_FALSE(check.dag_matches_offset(*raw, nullptr));
}

TEST_CASE("variance: a row variance loops over the row or splits it over blocks; the one-pass families come from the seed alone",
          "[search][variance]") {
  SearchLimits limits;
  limits.threads = 2;
  limits.budget_s = 120;
  const SearchResult r = search_program(test::lowered_text(kRowVariance, "var"), limits);
  REQUIRE(r.stats.stop_reason == "complete");
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
