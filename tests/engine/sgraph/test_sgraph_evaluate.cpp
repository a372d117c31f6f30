// The numeric evaluator against the reference interpreter: each workload's fused family,
// instantiated for two bindings and several grid/loop choices, on random inputs.
#include <catch2/catch.hpp>

#include "families.h"
#include "sgraph_helpers.h"

using namespace prism;
using namespace prism::test;
namespace fam = prism::test::families;

namespace {
constexpr double kF16 = 2e-2;  // f16 storage of the reference's intermediates vs f32 tiles
}

TEST_CASE("rms_linear family matches the reference", "[sgraph][evaluate]") {
  for (const DimBindings& dims : {DimBindings{{"n", 8}, {"d", 64}}, DimBindings{{"n", 5}, {"d", 96}}})
    for (auto [g, f] : {std::pair{1, 1}, {4, 2}, {8, 4}, {2, 8}}) {
      CAPTURE(dims.at("n"), dims.at("d"), g, f);
      CHECK(family_error(fam::kRmsLinearProgram, fam::kRmsLinear, dims, {{"g1", g}, {"F1", f}}) < kF16);
    }
}

TEST_CASE("rms_linear family in f32 matches tightly", "[sgraph][evaluate]") {
  auto f32 = [](std::string s) {
    for (size_t at; (at = s.find("f16")) != std::string::npos;) s.replace(at, 3, "f32");
    return s;
  };
  DimBindings dims{{"n", 4}, {"d", 32}};
  CHECK(family_error(f32(fam::kRmsLinearProgram), f32(fam::kRmsLinear), dims, {{"g1", 4}, {"F1", 4}}) < 1e-5);
}

TEST_CASE("gated_mlp family matches the reference", "[sgraph][evaluate]") {
  for (const DimBindings& dims : {DimBindings{{"n", 8}, {"d", 64}}, DimBindings{{"n", 3}, {"d", 48}}})
    for (auto [g, f] : {std::pair{1, 1}, {4, 4}, {16, 2}, {2, 16}}) {
      CAPTURE(dims.at("n"), dims.at("d"), g, f);
      CHECK(family_error(fam::kGatedMlpProgram, fam::kGatedMlp, dims, {{"g1", g}, {"F1", f}}) < kF16);
    }
}

TEST_CASE("attention family (split-s with a combining kernel) matches the reference", "[sgraph][evaluate]") {
  struct Sizes {
    int g1, g2, f1, g3, f2;
  };
  for (const DimBindings& dims : {DimBindings{{"B", 4}, {"q", 1}, {"s", 64}, {"e", 16}}, DimBindings{{"B", 2}, {"q", 3}, {"s", 96}, {"e", 8}}})
    for (Sizes z : {Sizes{1, 1, 1, 1, 1}, Sizes{2, 4, 2, 2, 4}, Sizes{1, 8, 4, 2, 2}, Sizes{2, 2, 8, 1, 1}}) {
      CAPTURE(dims.at("B"), dims.at("q"), dims.at("s"), z.g1, z.g2, z.f1, z.g3, z.f2);
      DimBindings sizes{{"g1", z.g1}, {"g2", z.g2}, {"F1", z.f1}, {"g3", z.g3}, {"F2", z.f2}};
      CHECK(family_error(fam::kAttentionProgram, fam::kAttention, dims, sizes) < kF16);
    }
}

TEST_CASE("lora family matches the reference", "[sgraph][evaluate]") {
  for (const DimBindings& dims : {DimBindings{{"n", 16}, {"d", 64}, {"m", 128}, {"r", 8}}, DimBindings{{"n", 4}, {"d", 32}, {"m", 96}, {"r", 4}}})
    for (auto [g, f] : {std::pair{1, 1}, {8, 4}, {32, 2}, {2, 16}}) {
      CAPTURE(dims.at("n"), dims.at("d"), dims.at("m"), g, f);
      CHECK(family_error(fam::kLoraProgram, fam::kLora, dims, {{"g1", g}, {"F1", f}}) < kF16);
    }
}

TEST_CASE("a wrong map evaluates to something else", "[sgraph][evaluate][negative]") {
  // W's grid and loop entries swapped: shapes agree when g1 == F1, values do not.
  std::string wrong = fam::kRmsLinear;
  wrong.replace(wrong.find("{grid: 1->g1, loop: 0}"), 22, "{grid: 0->g1, loop: 1}");
  DimBindings dims{{"n", 8}, {"d", 64}};
  CHECK(family_error(fam::kRmsLinearProgram, wrong, dims, {{"g1", 4}, {"F1", 4}}) > 0.1);
  // The shapes only agree when g1 == F1: any other choice is refused at instantiation.
  CHECK_THROWS_WITH(family_error(fam::kRmsLinearProgram, wrong, dims, {{"g1", 4}, {"F1", 2}}),
                    Catch::Contains("d/F1=32 and d/g1=16 differ"));
}

TEST_CASE("splitting the contraction across the grid needs the partials combined", "[sgraph][evaluate][negative]") {
  // g1 splits d (the contraction) in X and W: each block has a partial X@W.
  const char* partials = fam::kSplitContractionPartials;
  const char* program = fam::kSplitContractionProgram;
  DimBindings dims{{"n", 4}, {"d", 32}, {"m", 8}};
  // Combined by a sum over the partial axis: correct.
  std::string combined = std::string(partials) + "kernel 1: O: f32 = sum(P, axis=0, keepdims=false)\noutput O\n";
  CHECK(family_error(program, combined, dims, {{"g1", 4}}) < 1e-5);
  // Combined by a max instead: wrong.
  std::string maxed = std::string(partials) + "kernel 1: O: f32 = max(P, axis=0, keepdims=false)\noutput O\n";
  CHECK(family_error(program, maxed, dims, {{"g1", 4}}) > 0.1);
  // Not combined at all: the validator refuses the family.
  CHECK_THROWS_WITH(family_error(program, std::string(partials) + "output P\n", dims, {{"g1", 4}}),
                    Catch::Contains("output 'P' still has 1 partial axis(es) of a cross-block reduction"));
}

TEST_CASE("evaluate checks its inputs", "[sgraph][evaluate]") {
  sgraph::SGraph g = sgraph::parse(fam::kRmsLinear);
  DimBindings dims{{"n", 2}, {"d", 8}};
  auto inst = sgraph::instantiate(g, dims, {{"g1", 2}, {"F1", 2}}, {});
  auto inputs = random_inputs(g, dims, 1);
  inputs.erase("W");
  CHECK_THROWS_WITH(sgraph::evaluate(inst, inputs), Catch::Contains("no tensor given for input 'W'"));
  inputs = random_inputs(g, {{"n", 2}, {"d", 4}}, 1);
  CHECK_THROWS_WITH(sgraph::evaluate(inst, inputs), Catch::Contains("input 'X' has shape (2, 4)"));
  CancelToken cancel;
  cancel.cancel();
  CHECK_THROWS_AS(sgraph::evaluate(inst, random_inputs(g, dims, 1), &cancel), Error);
}


TEST_CASE("a family with views (a gain vector, a transposed weight) and constants matches the reference", "[sgraph][evaluate][views]") {
  for (const DimBindings& dims : {DimBindings{{"n", 4}, {"d", 64}, {"m", 32}}, DimBindings{{"n", 3}, {"d", 48}, {"m", 16}}})
    for (int64_t g : {1, 2, 4})
      for (int64_t f : {1, 4}) {
        INFO("g1=" << g << " F1=" << f);
        CHECK(family_error(fam::kLlamaProgram, fam::kLlama, dims, {{"g1", g}, {"F1", f}}) < 1e-5);
      }
}

TEST_CASE("an online-softmax family (rescaled accumulators) matches the reference, even at logits that overflow exp", "[sgraph][evaluate][online]") {
  for (const DimBindings& dims : {DimBindings{{"n", 4}, {"s", 64}, {"e", 8}}, DimBindings{{"n", 6}, {"s", 96}, {"e", 4}}})
    for (auto [g, f] : {std::pair{1, 1}, {2, 4}, {1, 8}, {2, 2}}) {
      CAPTURE(dims.at("n"), dims.at("s"), g, f);
      CHECK(family_error(fam::kOnlineSoftmaxProgram, fam::kOnlineSoftmax, dims, {{"g1", g}, {"F1", f}}) < 1e-5);
    }
  // Logits of a few hundred: exp alone would be inf; relative to the running max it never is.
  const sgraph::SGraph g = sgraph::parse(fam::kOnlineSoftmax);
  const DimBindings dims{{"n", 2}, {"s", 32}, {"e", 4}};
  std::map<std::string, Tensor> in = random_inputs(g, dims, 3);
  for (size_t i = 0; i < in.at("S").data.size(); ++i) in.at("S").data[i] = 300.0f + float(i % 7) * 40.0f;
  std::vector<Tensor> want = run_text(fam::kOnlineSoftmaxProgram, dims, in);
  std::vector<Tensor> got = sgraph::evaluate(sgraph::instantiate(g, dims, {{"g1", 2}, {"F1", 4}}, sgraph::TileBudget{}), in);
  for (float v : got.at(0).data) REQUIRE(std::isfinite(v));
  CHECK(relative_error(got.at(0), want.at(0)) < 1e-5);
}

TEST_CASE("a rotary family (split and concat on tiles) matches the reference", "[sgraph][evaluate][rotary]") {
  for (const DimBindings& dims : {DimBindings{{"h", 4}, {"s", 6}, {"e", 8}}, DimBindings{{"h", 2}, {"s", 12}, {"e", 32}}})
    for (auto [g1, g2] : {std::pair{1, 1}, {2, 3}, {2, 2}}) {
      CAPTURE(dims.at("e"), g1, g2);
      CHECK(family_error(fam::kRotaryProgram, fam::kRotary, dims, {{"g1", g1}, {"g2", g2}}) < 1e-6);
    }
}
