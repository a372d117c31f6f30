// The structural validator: valid families pass, invalid ones are refused with precise messages.
#include <catch2/catch.hpp>

#include "engine/error.h"
#include "engine/sgraph/canonical.h"
#include "engine/sgraph/parse.h"
#include "engine/sgraph/print.h"
#include "engine/sgraph/validate.h"
#include "families.h"

using namespace prism;
using namespace prism::sgraph;
namespace fam = prism::test::families;

namespace {
// The validator's messages for a family given as text.
std::vector<std::string> errors(const std::string& text) { return validate(parse(text)); }

const std::string kXW = "input X: f32[n, d]\ninput W: f32[d, m]\n";
}  // namespace

TEST_CASE("the workload families are valid", "[sgraph][validate]") {
  for (const char* text : {fam::kRmsLinear, fam::kGatedMlp, fam::kAttention, fam::kLora}) CHECK(errors(text).empty());
}

TEST_CASE("the analysis derives tiles, loop roles, constraints and the footprint", "[sgraph][validate]") {
  Analysis a = analyze(parse(fam::kRmsLinear));
  REQUIRE(a.ok());
  const auto& t = a.tiles[0];
  CHECK(t[0].role == LoopRole::Walks);
  CHECK(t[0].loop_axis == 1);
  CHECK(t[2].role == LoopRole::Partial);  // x@w: the loop walks the contraction
  CHECK(t[3].role == LoopRole::After);
  std::vector<std::string> cs;
  for (const Constraint& c : a.constraints) cs.push_back(c.str());
  CHECK(cs == std::vector<std::string>{"F1 divides d (kernel 0: op 0 'x' = load X, dim 1)",
                                       "F1 divides d (kernel 0: op 1 'w' = load W, dim 0)",
                                       "g1 divides d (kernel 0: op 1 'w' = load W, dim 1)"});
  // x (f16) + w (f16) + xw, acc, r, y (f32).
  REQUIRE(a.footprint[0]);
  CHECK(a.footprint[0]->evaluate({{"n", 8}, {"d", 64}, {"g1", 4}, {"F1", 2}}) == Rational(8 * 32 * 2 + 32 * 16 * 2 + 3 * 8 * 16 * 4 + 8 * 4));
  Analysis att = analyze(parse(fam::kAttention));
  CHECK(att.partial_axes.at("Pn") == 1);
  CHECK(att.tensors.at("Pd").shape == std::vector<Dim>{Dim::symbol("g2"), Dim::symbol("B"), Dim::symbol("q"), Dim(1)});
}

TEST_CASE("map errors", "[sgraph][validate][negative]") {
  CHECK(errors(kXW + "kernel 0: custom grid=[g1, g2]\n  x = load X map {grid: 0->g1 0->g2, loop: -}\n") ==
        std::vector<std::string>{"kernel 0: op 0 'x' = load X: grid dims g1 and g2 both partition dim 0 of X"});
  CHECK(errors(kXW + "kernel 0: custom grid=[g1]\n  x = load X map {grid: 2->g1, loop: -}\n") ==
        std::vector<std::string>{"kernel 0: op 0 'x' = load X: grid g1 names dim 2 but X has rank 2"});
  CHECK(errors(kXW + "kernel 0: custom grid=[g1]\n  x = load X map {grid: -, loop: 1}\n") ==
        std::vector<std::string>{"kernel 0: op 0 'x' = load X: the map has the loop walk dim 1 but the kernel has no loop"});
  CHECK(errors(kXW + "kernel 0: custom grid=[g1]\n  x = load Y map {grid: -, loop: -}\n") ==
        std::vector<std::string>{"kernel 0: op 0 'x' = load Y: 'Y' is not an input and no earlier kernel writes it"});
  SGraph g = parse(kXW + "kernel 0: custom grid=[g1, g2]\n  x = load X map {grid: -, loop: -}\n");
  g.kernels[0].block.ops[0].map.grid.pop_back();
  CHECK(validate(g) == std::vector<std::string>{"kernel 0: op 0 'x' = load X: the map has 1 grid entries but the grid has 2 dims"});
  CHECK(errors(kXW + "kernel 0: custom grid=[g, g]\n  x = load X map {grid: -, loop: -}\n") ==
        std::vector<std::string>{"kernel 0: grid dims 0 and 1 have the same size g; give each grid dim its own size so maps can name it"});
}

TEST_CASE("size errors are decided when the sizes are numbers", "[sgraph][validate][negative]") {
  CHECK(errors("input X: f32[6, 8]\nkernel 0: custom grid=[4]\n  x = load X map {grid: 0->4, loop: -}\n") ==
        std::vector<std::string>{"kernel 0: op 0 'x' = load X, dim 0: 6 is not divisible by 4"});
  CHECK(errors("input X: f32[n, 8]\ninput W: f32[4, 8]\nkernel 0: custom grid=[g]\n  x = load X map {grid: -, loop: -}\n"
               "  w = load W map {grid: -, loop: -}\n  y = matmul(x, w)\n") ==
        std::vector<std::string>{"kernel 0: op 2 'y' = matmul: inner dims 8 and 4 differ"});
  CHECK(errors("input X: f32[n, d]\nkernel 0: custom grid=[0]\n  x = load X map {grid: -, loop: -}\n") ==
        std::vector<std::string>{"kernel 0: grid dim 0 is 0, not a positive integer"});
  CHECK(errors("input X: f32[n, d]\nkernel 0: custom grid=[n]\n  x = load X map {grid: 0->n, loop: -}\n") ==
        std::vector<std::string>{"'n' is both a tensor dim and a grid size or loop range"});
}

TEST_CASE("loop errors", "[sgraph][validate][negative]") {
  // Saving x@w inside the loop that walks its contraction.
  CHECK(errors(kXW + "kernel 0: custom grid=[g1] loop=F\n  x = load X map {grid: -, loop: 1}\n  w = load W map {grid: 1->g1, loop: 0}\n"
                     "  y = matmul(x, w)\n  save O: f32 = y map {grid: 1->g1, loop: -}\n") ==
        std::vector<std::string>{"kernel 0: op 3 save O: the loop walks a reduction in this value: save it after an accumulator"});
  // A loop-walked value saved with the wrong loop entry; a correct one.
  std::string walk = "input X: f32[n, d]\nkernel 0: custom grid=[g1] loop=F\n  x = load X map {grid: 1->g1, loop: 0}\n  y = exp(x)\n";
  CHECK(errors(walk + "  save O: f32 = y map {grid: 1->g1, loop: -}\noutput O\n") ==
        std::vector<std::string>{"kernel 0: op 2 save O: the loop walks tile axis 0 but the map has the loop walk dim -"});
  CHECK(errors(walk + "  save O: f32 = y map {grid: 1->g1, loop: 0}\noutput O\n").empty());
  // After-the-loop values meeting loop-body values; accumulating what does not change.
  std::string acc = kXW + "kernel 0: custom grid=[g1] loop=F\n  x = load X map {grid: -, loop: 1}\n  w = load W map {grid: 1->g1, loop: 0}\n"
                          "  y = matmul(x, w)\n  a = sum_accumulate(y)\n";
  CHECK(errors(acc + "  z = mul(a, x)\n") ==
        std::vector<std::string>{"kernel 0: op 4 'z' = mul: mixes a value computed after the loop with a value of the loop body"});
  CHECK(errors(acc + "  b = sum_accumulate(a)\n") ==
        std::vector<std::string>{"kernel 0: op 4 'b' = sum_accumulate: its operand is computed after the loop"});
  CHECK(errors(kXW + "kernel 0: custom grid=[g1] loop=F\n  x = load X map {grid: -, loop: -}\n  a = max_accumulate(x)\n") ==
        std::vector<std::string>{"kernel 0: op 1 'a' = max_accumulate: its operand is loop-invariant; there is nothing to accumulate"});
  CHECK(errors(kXW + "kernel 0: custom grid=[g1]\n  x = load X map {grid: -, loop: -}\n  a = sum_accumulate(x)\n") ==
        std::vector<std::string>{"kernel 0: op 1 'a' = sum_accumulate: an accumulator needs a kernel with a loop"});
  // A value mixing iterations (the loop walks rows of one operand and columns of the other).
  CHECK(errors(kXW + "kernel 0: custom grid=[g1] loop=F\n  x = load X map {grid: -, loop: 0}\n  w = load W map {grid: -, loop: 1}\n"
                     "  z = matmul(x, w)\n  save O: f32 = z map {grid: -, loop: 0}\n")
            .at(0) == "kernel 0: op 3 save O: this value mixes loop iterations; accumulate it or save a value the loop walks along one axis");
}

TEST_CASE("graph errors", "[sgraph][validate][negative]") {
  CHECK(errors("input X: f32[n]\nkernel 0: Y: f32 = exp(Z)\noutput Y\n") ==
        std::vector<std::string>{"kernel 0: Y = exp: reads 'Z', which is not an input and no earlier kernel writes"});
  CHECK(errors("input X: f32[n]\nkernel 0: X: f32 = exp(X)\n") == std::vector<std::string>{"kernel 0: 'X' is written a second time"});
  CHECK(errors("input X: f32[n]\noutput Y\n") == std::vector<std::string>{"output 'Y' is not an input and no kernel writes it"});
  CHECK(errors("input X: f32[n, d]\ninput W: f32[m, d]\nkernel 0: Y: f32 = matmul(X, W)\n") ==
        std::vector<std::string>{"kernel 0: Y = matmul: matmul: inner dims d and m differ"});
}

TEST_CASE("malformed families give errors, never crashes", "[sgraph][validate][negative]") {
  const char* texts[] = {
      "input X: f32[n]\nkernel 0: custom grid=[0]\n  x = load X map {grid: 0->0, loop: -}\n  save O: f32 = x map {grid: 0->0, loop: -}\n",
      "input X: f32[n]\nkernel 0: custom grid=[g] loop=F\n  x = load X map {grid: -, loop: 0}\n  s = sum(x, axis=3)\n",
      "input X: f32[n]\nkernel 0: custom grid=[g] loop=F\n  x = load X map {grid: ?a->g, loop: ?b}\n  y = exp(x)\n  save O: f32 = y map {grid: ?c->g, loop: ?d}\n"
      "kernel 1: P: f32 = sum(O, axis=0)\noutput P\n",
      "input X: f32[n, 1000000000]\nkernel 0: custom grid=[g]\n  x = load X map {grid: 0->g, loop: -}\n  y = mul(x, x)\n",
      "input X: f32[]\nkernel 0: custom grid=[]\n  x = load X map {grid: -, loop: -}\n  y = matmul(x, x)\n",
  };
  for (const char* t : texts) {
    CAPTURE(t);
    SGraph g = parse(t);
    CHECK_NOTHROW(validate(g));
    CHECK_NOTHROW(print(g));
    CHECK_NOTHROW(canonical_text(g));
  }
  CHECK(validate(parse(texts[0])).at(0) == "kernel 0: grid dim 0 is 0, not a positive integer");
  CHECK(validate(parse(texts[1])).at(0) == "kernel 0: op 1 's' = sum: sum: axis 3 out of range for rank 1");
  CHECK(validate(parse(texts[4])).at(0) == "kernel 0: op 1 'y' = matmul: matmul needs tiles of rank 2 or more");
  CHECK_THROWS_AS(parse("input X: f32[n*99999999999*99999999999]\n"), Error);
}

TEST_CASE("a rescaled accumulator takes a value and the max it is relative to", "[sgraph][validate][online]") {
  CHECK(errors(fam::kOnlineSoftmax).empty());
  // Round trip through the text form.
  CHECK(print(parse(print(parse(fam::kOnlineSoftmax)))) == print(parse(fam::kOnlineSoftmax)));
  // A max that would widen the value (a row max over e against row sums): refused.
  std::string widened = fam::kOnlineSoftmax;
  widened.replace(widened.find("al = rescaled_sum_accumulate(l, m)"), 34, "al = rescaled_sum_accumulate(m, x)");
  std::vector<std::string> e = errors(widened);
  REQUIRE_FALSE(e.empty());
  CHECK(e[0].find("rescaled_sum_accumulate") != std::string::npos);
  CHECK(e[0].find("would widen") != std::string::npos);
  // Without its max it is no rescaled accumulator.
  std::string alone = fam::kOnlineSoftmax;
  alone.replace(alone.find("ao = rescaled_sum_accumulate(o, m)"), 34, "ao = rescaled_sum_accumulate(o)");
  CHECK_THROWS(parse(alone));
}

TEST_CASE("split and concat need the whole axis they move data along in every tile", "[sgraph][validate][rotary]") {
  CHECK(errors(fam::kRotary).empty());
  const std::string io = "input X: f32[n, d]\ninput Y: f32[n, d]\n";
  // Cut by a grid dim: each block would split (or join) its own piece of the row.
  CHECK(errors(io + "kernel 0: custom grid=[g1]\n  x = load X map {grid: 1->g1, loop: -}\n  a = split(x, axis=1, parts=2, index=0)\n") ==
        std::vector<std::string>{"kernel 0: op 1 'a' = split: a grid dim cuts tile axis 1, which it moves data along"});
  // The cut reaches the concat through an elementwise op.
  CHECK(errors(io + "kernel 0: custom grid=[g1]\n  x = load X map {grid: 1->g1, loop: -}\n  y = load Y map {grid: -, loop: -}\n"
                    "  e = exp(x)\n  c = concat(e, y, axis=-1)\n") ==
        std::vector<std::string>{"kernel 0: op 3 'c' = concat: a grid dim cuts tile axis 1, which it moves data along"});
  // Walked by the loop.
  CHECK(errors(io + "kernel 0: custom grid=[] loop=F1\n  x = load X map {grid: -, loop: 1}\n  a = split(x, axis=1, parts=2, index=1)\n") ==
        std::vector<std::string>{"kernel 0: op 1 'a' = split: the loop walks tile axis 1, which it moves data along"});
  // Along the other, uncut axis: fine.
  CHECK(errors(io + "kernel 0: custom grid=[g1]\n  x = load X map {grid: 1->g1, loop: -}\n  a = split(x, axis=0, parts=2, index=1)\n"
                    "  save O: f32 = a map {grid: 1->g1, loop: -}\n")
            .empty());
  // Operands that do not line up.
  CHECK_THAT(errors(io + "kernel 0: custom grid=[]\n  x = load X map {grid: -, loop: -}\n  s = sum(x, axis=1)\n  c = concat(x, s, axis=0)\n").front(),
             Catch::Contains("concat"));
}
