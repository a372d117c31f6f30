// Inputs with a domain (issue 45): a program whose reference is NaN on inputs outside it (an
// inference BatchNorm's negative variance) is checked on inputs inside it, so its families verify.
#include <catch2/catch.hpp>

#include "engine/workspace/workspace.h"
#include "search_helpers.h"

using namespace prism;

namespace {

// nn.BatchNorm1d in eval mode: running mean and variance, gain and bias vectors.
const char* kBatchNorm =
    "program batchnorm(X: f32[n, d], mu: f32[d], var: f32[d], g: f32[d], b: f32[d]) {\n"
    "  return (X - mu) / sqrt(var + 1e-5) * g + b\n"
    "}\n";

}  // namespace

TEST_CASE("search: an inference BatchNorm finds verified families, its variance inferred non-negative", "[search][domains]") {
  const SearchResult r = search::search_program(test::lowered_text(kBatchNorm, "batchnorm"), SearchLimits{});
  INFO(r.stats.empty_reason);
  REQUIRE_FALSE(r.candidates.empty());
  for (const Candidate& c : r.candidates) CHECK(c.verified);
}

TEST_CASE("search: a declared domain is what the check draws from, and `run` draws inside it", "[search][domains]") {
  // Without inference to lean on (var reaches the sqrt through a sub), the declaration says it.
  const std::string text =
      "program shifted(X: f32[n, d], var: f32[d] >= 0) {\n"
      "  return X / sqrt(var - -0.001)\n"
      "}\n";
  const SearchResult r = search::search_program(test::lowered_text(text, "shifted"), SearchLimits{});
  REQUIRE_FALSE(r.candidates.empty());
  Workspace ws;
  ws.open("untitled:shifted", text, 1);
  RunRequest run;
  run.program = "shifted";
  run.bindings = {{"n", 4}, {"d", 8}};
  const RunResult out = ws.run(run);
  CHECK(out.outputs.at(0).nan == 0);
}
