// The search's floating-point checks (NumericCheck::unstable and ::overflows; docs/design.md,
// "Numerics"): a computation proved equal over the reals that overflows, cancels or turns NaN
// where its program does not is rejected before anyone sees it, naming the set.
#include <catch2/catch.hpp>

#include "engine/search/dag.h"
#include "engine/search/search.h"
#include "engine/search/verify.h"
#include "search_helpers.h"

using namespace prism;
using namespace prism::search;

namespace {

// A softmax written stably over scores plus a mask: either input may be the scores.
const char* kMaskedSoftmax = R"(program masked(S: f32[n, s], M: f32[n, s]) {
  T = S + M
  E = exp(T - max(T, axis=-1))
  return E / sum(E, axis=-1)
})";

Dag dag_of(const std::string& text, const std::string& name, const std::vector<DagValue>& leaves) {
  const std::optional<Dag> dag = program_dag(test::lowered_text(text, name), leaves);
  REQUIRE(dag);
  return *dag;
}

}  // namespace

TEST_CASE("float checks: exp(T) / exp(max T) for a stable softmax is rejected beside a zero mask", "[search][numerics]") {
  const Program p = test::lowered_text(kMaskedSoftmax, "masked");
  const std::vector<DagValue> leaves = dag_leaves(p);
  NumericCheck check(p);
  CHECK_FALSE(check.unstable(dag_of(kMaskedSoftmax, "masked", leaves), nullptr));
  const Dag split = dag_of(R"(program masked(S: f32[n, s], M: f32[n, s]) {
  T = S + M
  E = exp(T) / exp(max(T, axis=-1))
  return E / sum(E, axis=-1)
})",
                           "masked", leaves);
  // Equal on the seeded inputs, where the logits are small ...
  CHECK(check.dag_matches(split, nullptr));
  // ... and NaN where one logit is about 100 and the mask beside it 0.
  const std::optional<std::string> why = check.unstable(split, nullptr);
  REQUIRE(why);
  CHECK(why->find("NaN or infinite values where the program's are finite") != std::string::npos);
}

TEST_CASE("float checks: a LayerNorm centred once is rejected against one centred twice", "[search][numerics]") {
  const char* ln = "program ln(X: f32[n, d]) {\n  return layer_norm(X, eps=1e-5)\n}\n";
  const Program p = test::lowered_text(ln, "ln");
  const std::vector<DagValue> leaves = dag_leaves(p);
  NumericCheck check(p);
  CHECK_FALSE(check.unstable(dag_of(ln, "ln", leaves), nullptr));
  const std::optional<std::string> why = check.unstable(dag_of(R"(program ln(X: f32[n, d]) {
  c = X - mean(X, axis=-1)
  return c / sqrt(mean(c * c, axis=-1) + 1e-5)
})",
                                                               "ln", leaves),
                                                        nullptr);
  REQUIRE(why);
  CHECK(why->find("on mean-shifted rows, output 0 is off by") != std::string::npos);
}

TEST_CASE("float checks: no family of a masked softmax overflows on the floating-point edge sets", "[search][numerics]") {
  const Program p = test::lowered_text(kMaskedSoftmax, "masked");
  SearchLimits limits;
  limits.threads = 2;
  limits.budget_s = 120;
  const SearchResult r = search_program(p, limits);
  REQUIRE(r.stats.stop_reason == SearchStop::Complete);
  REQUIRE_FALSE(r.candidates.empty());
  // Re-checked apart from the search: every family reported runs finite where the program does.
  NumericCheck check(p);
  for (const Candidate& c : r.candidates) {
    INFO(c.summary);
    CHECK_FALSE(check.mismatch(*c.graph, nullptr));
  }
}
