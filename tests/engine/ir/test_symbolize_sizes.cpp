// symbolize_sizes: a program's fixed widths become dims for the search, except where a reshape,
// split or concat ties them; the search's families come back with the numbers (docs/search.md,
// "Fixed sizes").
#include <catch2/catch.hpp>

#include "../interp_helpers.h"
#include "../search/search_helpers.h"
#include "../sgraph/sgraph_helpers.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/print.h"
#include "engine/ir/symbolize_sizes.h"
#include "engine/sgraph/canonical.h"
#include "engine/sgraph/instantiate.h"
#include "engine/sgraph/parse.h"
#include "engine/sgraph/print.h"
#include "engine/sgraph/substitute_dims.h"

using namespace prism;

namespace {

// An imported Llama MLP block at fixed widths (from_torch names only the token count).
const char* kImported =
    "program imported(x: f32[n, 64], g: f32[64], Wg: f32[96, 64], Wu: f32[96, 64], Wd: f32[64, 96]) {\n"
    "  y = x * rsqrt(mean(x ** 2, axis=-1, keepdims=true) + 1e-6) * g\n"
    "  return x + (silu(y @ Wg.T) * (y @ Wu.T)) @ Wd.T\n}\n";

}  // namespace

TEST_CASE("symbolize_sizes: fixed widths become dims, a mean still divides by its number", "[ir][search][fixed-sizes]") {
  const Program p = test::lowered_text(kImported, "imported");
  const SymbolizedSizes s = symbolize_sizes(p);
  CHECK(s.sizes == std::map<std::string, int64_t>{{"__s64", 64}, {"__s96", 96}});
  const std::string text = print_program(s.program);
  INFO(text);
  CHECK(text.find("f32[n, __s64]") != std::string::npos);
  CHECK(text.find("64") == text.find("__s64") + 3);  // no 64 left but in the dim's name, and the mean's constant:
  CHECK(text.find("/ 64") != std::string::npos);
  // At the binding of the fixed sizes, the same program.
  CHECK(test::programs_apart(p, s.program, {{"n", 3}, {"__s64", 64}, {"__s96", 96}}, 5) <= 1);
  CHECK(with_sizes("grid g1 splits __s96, loop over __s64", s.sizes) == "grid g1 splits 96, loop over 64");

  // Sizes a reshape ties stay numbers; a program with no fixed size is itself.
  const Program heads = test::lowered_text(
      "program heads(X: f32[n, 64], W: f32[16, 32]) {\n  return sum(reshape(X, [n, 4, 16]), axis=1) @ W\n}\n", "heads");
  CHECK(symbolize_sizes(heads).sizes == std::map<std::string, int64_t>{{"__s32", 32}});
  const Program generic = test::lowered_text("program generic(X: f32[n, d]) {\n  return exp(X)\n}\n", "generic");
  CHECK(symbolize_sizes(generic).sizes.empty());
}

TEST_CASE("search at fixed widths: the families of the named widths, written with the numbers, equal to the program",
          "[search][fixed-sizes]") {
  const Program p = test::lowered_text(kImported, "imported");
  SearchLimits limits;
  limits.threads = 2;
  limits.budget_s = 120;
  const SearchResult r = search::search_program(p, limits);
  REQUIRE(r.candidates.size() >= 10);
  bool cut = false;
  for (const Candidate& c : r.candidates) {
    INFO(c.text());
    CHECK(c.text().find("__s") == std::string::npos);
    CHECK(c.summary.find("__s") == std::string::npos);
    INFO(c.proof.substr(c.proof.find("__s") == std::string::npos ? 0 : c.proof.find("__s") - 100, 200));
    CHECK(c.proof.find("__s") == std::string::npos);
    cut = cut || c.summary.find("pieces cut") != std::string::npos;
    DimBindings sizes;
    for (const std::string& param : c.graph->parameters()) sizes[param] = 2;
    const sgraph::Instance inst = sgraph::instantiate(*c.graph, {{"n", 4}}, sizes, sgraph::TileBudget{int64_t(1) << 30});
    auto inputs = test::random_inputs(*c.graph, {{"n", 4}}, 3);
    CHECK(test::relative_error(sgraph::evaluate(inst, inputs).at(0), interpret(p, {{"n", 4}}, inputs).at(0)) < 1e-4);
  }
  CHECK(cut);
}

TEST_CASE("a family's fixed sizes are written back on the sGraph's values, as printing, renaming and parsing it did",
          "[search][fixed-sizes][sgraph]") {
  const Program p = test::lowered_text(kImported, "imported");
  const SymbolizedSizes fixed = symbolize_sizes(p);
  SearchLimits limits;
  limits.threads = 2;
  limits.budget_s = 120;
  const SearchResult r = search::search_program(fixed.program, limits);
  REQUIRE(r.candidates.size() >= 10);
  std::map<std::string, Dim> values;
  for (const auto& [dim, size] : fixed.sizes) values.emplace(dim, Dim(size));
  for (const Candidate& c : r.candidates) {
    const std::string by_text = sgraph::print(sgraph::canonicalize(sgraph::parse(with_sizes(sgraph::print(*c.graph), fixed.sizes))));
    INFO(by_text);
    CHECK(sgraph::print(sgraph::canonicalize(sgraph::substitute_dims(*c.graph, values))) == by_text);
  }
}
