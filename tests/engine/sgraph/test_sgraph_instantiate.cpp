// Instantiation: binding grid sizes and loop ranges, candidate values, the memory budget.
#include <catch2/catch.hpp>

#include "engine/error.h"
#include "engine/sgraph/instantiate.h"
#include "engine/sgraph/parse.h"
#include "families.h"

using namespace prism;
using namespace prism::sgraph;
namespace fam = prism::test::families;

TEST_CASE("instantiate binds sizes and checks every constraint", "[sgraph][instantiate]") {
  SGraph g = parse(fam::kRmsLinear);
  CHECK(g.parameters() == std::vector<std::string>{"g1", "F1"});
  DimBindings dims{{"n", 8}, {"d", 64}};
  Instance inst = instantiate(g, dims, {{"g1", 4}, {"F1", 8}}, {});
  CHECK(inst.bindings == DimBindings{{"n", 8}, {"d", 64}, {"g1", 4}, {"F1", 8}});
  CHECK_THROWS_WITH(instantiate(g, dims, {{"g1", 3}, {"F1", 8}}, {}), "g1=3 does not divide d=64 (kernel 0: op 1 'w' = load W, dim 1)");
  CHECK_THROWS_WITH(instantiate(g, dims, {{"g1", 4}}, {}), "no value for F1");
  CHECK_THROWS_WITH(instantiate(g, dims, {{"g1", 4}, {"F1", 2}, {"h", 2}}, {}), "'h' is not a grid size or loop range of this family");
  CHECK_THROWS_WITH(instantiate(g, dims, {{"g1", 0}, {"F1", 2}}, {}), "g1=0 is not a positive size");
  CHECK_THROWS_WITH(instantiate(g, {{"n", 8}}, {{"g1", 4}, {"F1", 2}}, {}), "no value for dim d of input X");
  // 8x32 f16 + 32x16 f16 + three 8x16 f32 tiles + 8x1 f32 = 3104 bytes.
  TileBudget small{3103};
  CHECK_THROWS_WITH(instantiate(g, dims, {{"g1", 4}, {"F1", 2}}, small),
                    "kernel 0 needs 3104 bytes of fast memory per block but a block has 3103");
  small.fast_memory_bytes = 3104;
  CHECK_NOTHROW(instantiate(g, dims, {{"g1", 4}, {"F1", 2}}, small));
  SGraph open = parse("input X: f32[n]\nkernel 0: custom grid=[g]\n  x = load X map {grid: ?a->g, loop: -}\n");
  CHECK_THROWS_WITH(instantiate(open, {{"n", 4}}, {{"g", 2}}, {}), Catch::Contains("open map choices (?a)"));
  CHECK_THROWS_WITH(instantiate(parse("input X: f32[n]\noutput Y\n"), {{"n", 4}}, {}, {}),
                    "the family is invalid: output 'Y' is not an input and no kernel writes it");
}

TEST_CASE("candidate values divide the dims they split", "[sgraph][instantiate]") {
  SGraph g = parse(fam::kLora);
  DimBindings dims{{"n", 16}, {"d", 48}, {"m", 96}, {"r", 8}};
  auto c = candidate_values(g, dims, {64, true});
  CHECK(c.at("g1") == std::vector<int64_t>{1, 2, 4, 8, 16, 32});  // divides m = 96
  CHECK(c.at("F1") == std::vector<int64_t>{1, 2, 4, 8, 16});      // divides d = 48
  auto all = candidate_values(g, dims, {12, false});
  CHECK(all.at("F1") == std::vector<int64_t>{1, 2, 3, 4, 6, 8, 12});
}

TEST_CASE("enumerate lists the instantiations that fit", "[sgraph][instantiate]") {
  SGraph g = parse(fam::kAttention);
  DimBindings dims{{"B", 4}, {"q", 1}, {"s", 64}, {"e", 16}};
  auto sizes = enumerate(g, dims, {}, {8, true});
  REQUIRE(!sizes.empty());
  for (const DimBindings& s : sizes) {
    CHECK(s.at("F2") <= s.at("g2"));  // F2 walks the g2 partials: a joint constraint
    CHECK_NOTHROW(instantiate(g, dims, s, {}));
  }
  // g1, g3 in {1,2,4}; g2 in {1..8}, F1 with g2*F1 | 64; F2 | g2.
  size_t expected = 0;
  for (int g1 : {1, 2, 4})
    for (int g2 : {1, 2, 4, 8})
      for (int f1 : {1, 2, 4, 8})
        for (int g3 : {1, 2, 4})
          for (int f2 : {1, 2, 4, 8})
            if (64 % (g2 * f1) == 0 && g2 % f2 == 0) expected += g1 > 0 && g3 > 0;
  CHECK(sizes.size() == expected);
  CHECK(enumerate(g, dims, {}, {8, true}, 5).size() == 5);
}

TEST_CASE("the memory lower bound drops families whose smallest tiles cannot fit", "[sgraph][instantiate]") {
  SGraph g = parse(fam::kRmsLinear);
  DimBindings dims{{"n", 16}, {"d", 64}};
  // Smallest tiles: g1 = F1 = 64: x 16x1 f16, w 1x1 f16, 3 f32 tiles 16x1, r 16x1 = 32 + 2 + 256 bytes.
  CHECK(memory_lower_bound(g, dims, TileBudget{290}).empty());
  CHECK(memory_lower_bound(g, dims, TileBudget{289}) ==
        std::vector<std::string>{"kernel 0 needs at least 290 bytes of fast memory per block (footprint " +
                                 analyze(g).footprint[0]->str() + " at its smallest tiles) but a block has 289"});
  // A family that loads all of W in every block cannot shrink with its sizes.
  SGraph whole = parse("input W: f32[d, d]\nkernel 0: custom grid=[g]\n  w = load W map {grid: -, loop: -}\n  y = exp(w)\n"
                       "  save O: f32 = y map {grid: -, loop: -}\n");
  CHECK(memory_lower_bound(whole, {{"d", 64}}, TileBudget{2 * 64 * 64 * 4}).empty());
  CHECK(memory_lower_bound(whole, {{"d", 64}}, TileBudget{2 * 64 * 64 * 4 - 1}).size() == 1);
}

namespace {

// enumerate()'s contract spelled out the slow way: every combination of the candidate values, the
// first parameter turning fastest, that check_bindings accepts, up to `limit`.
std::vector<DimBindings> every_combination(const SGraph& g, const DimBindings& dims, const TileBudget& budget, size_t limit) {
  std::vector<DimBindings> out;
  const Analysis a = analyze(g);
  const auto cands = candidate_values(g, dims);
  const std::vector<std::string> params = g.parameters();
  std::vector<size_t> idx(params.size(), 0);
  for (const std::string& p : params)
    if (cands.at(p).empty()) return out;
  while (out.size() < limit) {
    DimBindings all = dims, sizes;
    for (size_t i = 0; i < params.size(); ++i) all[params[i]] = sizes[params[i]] = cands.at(params[i])[idx[i]];
    if (!check_bindings(a, all, budget)) out.push_back(sizes);
    size_t i = 0;
    while (i < params.size() && ++idx[i] == cands.at(params[i]).size()) idx[i++] = 0;
    if (i == params.size()) break;
  }
  return out;
}

}  // namespace

TEST_CASE("enumerate cuts failing combinations early and lists what trying every one lists, in its order", "[sgraph][instantiate]") {
  struct Case {
    const char* family;
    DimBindings dims;
  };
  const std::vector<Case> cases = {
      {fam::kRmsLinear, {{"n", 8}, {"d", 64}}},
      {fam::kRmsLinear, {{"n", 48}, {"d", 4096}}},
      {fam::kGatedMlp, {{"n", 16}, {"d", 1024}}},
      {fam::kAttention, {{"B", 32}, {"q", 1}, {"e", 128}, {"s", 8192}}},
      {fam::kAttention, {{"B", 2}, {"q", 64}, {"e", 64}, {"s", 256}}},
      {fam::kLora, {{"n", 4}, {"d", 256}, {"m", 512}, {"r", 8}}},
      {fam::kRotary, {{"h", 8}, {"s", 64}, {"e", 32}}},
      {fam::kHeadsInPlace, {{"n", 4}, {"d", 64}, {"h", 4}, {"e", 16}, {"s", 32}, {"m", 64}}},
      {fam::kLlama, {{"n", 2}, {"d", 4096}, {"m", 4096}}},
      {fam::kOnlineSoftmax, {{"n", 8}, {"s", 1024}, {"e", 64}}},
  };
  for (const Case& c : cases) {
    const SGraph g = parse(c.family);
    for (int64_t bytes : {int64_t(2048), int64_t(48 * 1024), int64_t(1) << 40})
      for (size_t limit : {size_t(3), size_t(4096)}) {
        CAPTURE(c.family, c.dims, bytes, limit);
        const std::vector<DimBindings> want = every_combination(g, c.dims, {bytes}, limit);
        CHECK(enumerate(g, c.dims, {bytes}, {}, limit) == want);
      }
  }
  // A budget nothing fits leaves nothing.
  CHECK(enumerate(parse(fam::kRmsLinear), {{"n", 8}, {"d", 64}}, {16}).empty());
}
