// The finite-field fingerprint (engine/search/fingerprint.h): the workload families fingerprint
// equal to their programs at any grid/loop choice (exact arithmetic: no summation order), wrong
// families differ, and what has no model (a log, a zero denominator) is "cannot fingerprint".
#include <catch2/catch.hpp>

#include "../interp_helpers.h"
#include "../sgraph/families.h"
#include "../search/search_helpers.h"
#include "engine/search/fingerprint.h"
#include "engine/search/search.h"
#include "engine/sgraph/parse.h"

using namespace prism;
using namespace prism::search;
namespace fam = prism::test::families;

namespace {

Program program_of(const std::string& text) { return lower_composites(test::only_program(text)); }

// The family's and the program's fingerprints at (dims, sizes) on the same field inputs.
std::pair<std::optional<FieldTensor>, std::optional<FieldTensor>> both(const std::string& program, const std::string& family,
                                                                       const DimBindings& dims, const DimBindings& sizes) {
  const Program p = program_of(program);
  const FieldInputs in = random_field_inputs(p, dims, 11);
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(family), dims, sizes, sgraph::TileBudget{int64_t(1) << 40});
  return {fingerprint(inst, in), fingerprint(p, dims, in)};
}

void check_family(const char* program, const char* family, const DimBindings& dims, const std::vector<DimBindings>& choices) {
  std::optional<FieldTensor> first;
  for (const DimBindings& sizes : choices) {
    auto [got, want] = both(program, family, dims, sizes);
    REQUIRE(got);
    REQUIRE(want);
    CHECK(*got == *want);
    if (!first) first = got;
    CHECK(*got == *first);  // bit-identical at every grid/loop choice
  }
}

}  // namespace

TEST_CASE("fingerprint: the workload families equal their programs at every grid/loop choice", "[search][fingerprint]") {
  check_family(fam::kRmsLinearProgram, fam::kRmsLinear, {{"n", 8}, {"d", 64}}, {{{"g1", 1}, {"F1", 1}}, {{"g1", 4}, {"F1", 2}}, {{"g1", 2}, {"F1", 8}}});
  check_family(fam::kGatedMlpProgram, fam::kGatedMlp, {{"n", 3}, {"d", 48}}, {{{"g1", 1}, {"F1", 1}}, {{"g1", 4}, {"F1", 4}}, {{"g1", 16}, {"F1", 3}}});
  check_family(fam::kLoraProgram, fam::kLora, {{"n", 4}, {"d", 32}, {"m", 96}, {"r", 4}}, {{{"g1", 1}, {"F1", 1}}, {{"g1", 8}, {"F1", 4}}, {{"g1", 2}, {"F1", 16}}});
  const DimBindings att{{"B", 2}, {"q", 3}, {"s", 96}, {"e", 8}};
  check_family(fam::kAttentionProgram, fam::kAttention, att,
               {{{"g1", 1}, {"g2", 1}, {"F1", 1}, {"g3", 1}, {"F2", 1}}, {{"g1", 2}, {"g2", 4}, {"F1", 2}, {"g3", 2}, {"F2", 2}},
                {{"g1", 1}, {"g2", 8}, {"F1", 4}, {"g3", 2}, {"F2", 4}}});
}

TEST_CASE("fingerprint: wrong families differ", "[search][fingerprint][negative]") {
  // W's grid and loop entries swapped (shapes agree when g1 == F1).
  std::string wrong = fam::kRmsLinear;
  wrong.replace(wrong.find("{grid: 1->g1, loop: 0}"), 22, "{grid: 0->g1, loop: 1}");
  auto [got, want] = both(fam::kRmsLinearProgram, wrong, {{"n", 8}, {"d", 64}}, {{"g1", 4}, {"F1", 4}});
  REQUIRE(got);
  REQUIRE(want);
  CHECK_FALSE(*got == *want);
  // The contraction split across the grid: combined by a sum, equal; by a max, different.
  const std::string partials = fam::kSplitContractionPartials;
  const char* program = fam::kSplitContractionProgram;
  const DimBindings dims{{"n", 4}, {"d", 32}, {"m", 8}};
  auto [sum, ref] = both(program, partials + "kernel 1: O: f32 = sum(P, axis=0, keepdims=false)\noutput O\n", dims, {{"g1", 4}});
  auto [max, ref2] = both(program, partials + "kernel 1: O: f32 = max(P, axis=0, keepdims=false)\noutput O\n", dims, {{"g1", 4}});
  REQUIRE((sum && max && ref));
  CHECK(*sum == *ref);
  CHECK_FALSE(*max == *ref);
}

TEST_CASE("fingerprint: online softmax's rescaled accumulators are exact, a plain sum of the pieces is not", "[search][fingerprint][online]") {
  check_family(fam::kOnlineSoftmaxProgram, fam::kOnlineSoftmax, {{"n", 4}, {"s", 48}, {"e", 4}},
               {{{"g1", 1}, {"F1", 1}}, {{"g1", 2}, {"F1", 4}}, {{"g1", 4}, {"F1", 3}}});
  // Summing each iteration's partials without rescaling them to the running max: different.
  std::string plain = fam::kOnlineSoftmax;
  for (const char* acc : {"rescaled_sum_accumulate(l, m)", "rescaled_sum_accumulate(o, m)"}) {
    const std::string name = std::string(acc).substr(24, 1);
    plain.replace(plain.find(acc), std::string(acc).size(), "sum_accumulate(" + name + ")");
  }
  auto [got, want] = both(fam::kOnlineSoftmaxProgram, plain, {{"n", 4}, {"s", 48}, {"e", 4}}, {{"g1", 2}, {"F1", 4}});
  REQUIRE((got && want));
  CHECK_FALSE(*got == *want);
}

TEST_CASE("fingerprint: exp is a homomorphism (a softmax shifted by its max is the same)", "[search][fingerprint]") {
  const Program a = program_of("program a(X: f32[n, k]) {\n  return exp(X) / sum(exp(X), axis=-1)\n}\n");
  const Program b = program_of("program b(X: f32[n, k]) {\n  E = exp(X - max(X, axis=-1))\n  return E / sum(E, axis=-1)\n}\n");
  const DimBindings dims{{"n", 4}, {"k", 16}};
  const FieldInputs in = random_field_inputs(a, dims, 5);
  auto fa = fingerprint(a, dims, in), fb = fingerprint(b, dims, in);
  REQUIRE((fa && fb));
  CHECK(*fa == *fb);
  // exp(X) / sum(exp(X)) is not exp(X) / sum(X).
  const Program c = program_of("program c(X: f32[n, k]) {\n  return exp(X) / sum(X, axis=-1)\n}\n");
  auto fc = fingerprint(c, dims, in);
  REQUIRE(fc);
  CHECK_FALSE(*fa == *fc);
}

TEST_CASE("fingerprint: a log or a zero denominator cannot be fingerprinted", "[search][fingerprint]") {
  const DimBindings dims{{"n", 4}};
  const Program lg = program_of("program l(X: f32[n, n]) {\n  return log(X)\n}\n");
  CHECK_FALSE(fingerprint(lg, dims, random_field_inputs(lg, dims, 1)));
  const Program zero = program_of("program z(X: f32[n, n]) {\n  return X / (X - X)\n}\n");
  CHECK_FALSE(fingerprint(zero, dims, random_field_inputs(zero, dims, 1)));
  FingerprintCheck check(lg, {{"n", 24}});
  std::string why;
  CHECK(check.check(sgraph::parse("input X: f32[n, n]\nkernel 0: O: f32 = log(X)\noutput O\n"), why, nullptr) == FingerprintCheck::Verdict::Cannot);
}

TEST_CASE("fingerprint: the check at the numeric check's instance", "[search][fingerprint]") {
  const Program p = program_of(fam::kRmsLinearProgram);
  FingerprintCheck check(p, {{"n", 24}, {"d", 48}});
  std::string why;
  CHECK(check.check(sgraph::parse(fam::kRmsLinear), why, nullptr) == FingerprintCheck::Verdict::Match);
  std::string wrong = fam::kRmsLinear;
  wrong.replace(wrong.find("y = div(acc, r)"), 15, "y = mul(acc, r)");
  CHECK(check.check(sgraph::parse(wrong), why, nullptr) == FingerprintCheck::Verdict::Differ);
  CHECK(why.find("fingerprint") != std::string::npos);
}

TEST_CASE("fingerprint: the search fingerprints families first and still finds the workload", "[search][fingerprint]") {
  SearchLimits limits;
  limits.threads = 2;
  const SearchResult r = search::search_program(test::lowered_example("rms_linear"), limits);
  CHECK(r.stats.fingerprinted > 0);
  CHECK(r.stats.fingerprint_rejected <= r.stats.rejected);
  CHECK(r.stats.fingerprint_s <= r.stats.verify_s);
  CHECK_FALSE(r.candidates.empty());
}
