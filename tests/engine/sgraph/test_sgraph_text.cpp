// The sGraph text form (print, parse) and the canonical form and hash.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

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
const char* const kAll[] = {fam::kRmsLinear, fam::kGatedMlp, fam::kAttention, fam::kLora};

// The text without "# …" comments and trailing spaces.
std::string strip_comments(const std::string& text) {
  std::string out, line;
  for (char c : text + "\n") {
    if (c != '\n') {
      line += c;
      continue;
    }
    line = line.substr(0, line.find('#'));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (!line.empty()) out += line + "\n";
    line.clear();
  }
  return out;
}
}  // namespace

TEST_CASE("printing a parsed family gives its text back, with derived types as comments", "[sgraph][text]") {
  for (const char* text : kAll) {
    SGraph g = parse(text);
    CHECK(validate(g).empty());
    std::string printed = print(g);
    CHECK(strip_comments(printed) == text);
    CHECK(print(parse(printed)) == printed);
  }
  std::string printed = print(parse(fam::kRmsLinear));
  // Each op line ends with its derived type, comments aligned at column 53.
  auto line_of = [&](const std::string& code) {
    size_t at = printed.find("  " + code);
    return at == std::string::npos ? std::string() : printed.substr(at, printed.find('\n', at) - at);
  };
  CHECK(line_of("w = load W map {grid: 1->g1, loop: 0}") == "  w = load W map {grid: 1->g1, loop: 0}" + std::string(13, ' ') + "# f16[d/F1, d/g1]");
  CHECK(line_of("r = rms_accumulate(x, axis=1)") == "  r = rms_accumulate(x, axis=1)" + std::string(21, ' ') + "# f32[n, 1]");
  CHECK(line_of("save O") == "  save O: f16 = y map {grid: 1->g1, loop: -}" + std::string(8, ' ') + "# f16[n, d]");
}

TEST_CASE("canonical text is a fixed point and round-trips", "[sgraph][text][canonical]") {
  for (const char* text : kAll) {
    std::string c = canonical_text(parse(text));
    CHECK(print(parse(c)) == c);
    CHECK(canonical_text(parse(c)) == c);
    CHECK(canonical_hash(parse(c)) == canonical_hash(parse(text)));
  }
}

TEST_CASE("canonical form of the rms_linear family", "[sgraph][text][canonical]") {
  CHECK(canonical_text(parse(fam::kRmsLinear)) == R"(input X: f16[n, d]
input W: f16[d, d]
kernel 0: custom grid=[g1] loop=F1
  t1 = load X map {grid: -, loop: 1}                # f16[n, d/F1]
  t2 = load W map {grid: 1->g1, loop: 0}            # f16[d/F1, d/g1]
  t3 = rms_accumulate(t1, axis=1)                   # f32[n, 1]
  t4 = matmul(t1, t2)                               # f32[n, d/g1]
  t5 = sum_accumulate(t4)                           # f32[n, d/g1]
  t6 = div(t5, t3)                                  # f32[n, d/g1]
  save O: f16 = t6 map {grid: 1->g1, loop: -}       # f16[n, d]
output O
)");
}

TEST_CASE("names and the order of independent ops and kernels do not change the hash", "[sgraph][canonical]") {
  const char* renamed = R"(input X: f16[n, d]
input Wg: f16[d, d]
input Wu: f16[d, d]
kernel 0: custom grid=[cols] loop=steps
  up = load Wu map {grid: 1->cols, loop: 0}
  gate = load Wg map {grid: 1->cols, loop: 0}
  xs = load X map {grid: -, loop: 1}
  u = matmul(xs, up)
  uacc = sum_accumulate(u)
  g = matmul(xs, gate)
  gacc = sum_accumulate(g)
  act = silu(gacc)
  out = mul(act, uacc)
  save O: f16 = out map {grid: 1->cols, loop: -}
output O
)";
  CHECK(canonical_text(parse(renamed)) == canonical_text(parse(fam::kGatedMlp)));
  CHECK(canonical_hash(parse(renamed)) == canonical_hash(parse(fam::kGatedMlp)));

  // Two independent library kernels in either order, with other intermediate names.
  std::string head = R"(input P: f32[g, n]
input Q: f32[g, n]
)";
  std::string a = head + "kernel 0: S1: f32 = sum(P, axis=0)\nkernel 1: S2: f32 = sum(Q, axis=-2)\nkernel 2: O: f32 = div(S1, S2)\noutput O\n";
  std::string b = head + "kernel 0: B: f32 = sum(Q, axis=0)\nkernel 1: A: f32 = sum(P, axis=0)\nkernel 2: O: f32 = div(A, B)\noutput O\n";
  CHECK(canonical_text(parse(a)) == canonical_text(parse(b)));

  // A different map, a different operand order, a different dtype: different families.
  std::string other_map = fam::kGatedMlp;
  other_map.replace(other_map.find("{grid: -, loop: 1}"), 18, "{grid: 0->g1, loop: 1}");
  CHECK(canonical_hash(parse(other_map)) != canonical_hash(parse(fam::kGatedMlp)));
  std::string swapped = b;
  swapped.replace(swapped.find("div(A, B)"), 9, "div(B, A)");
  CHECK(canonical_hash(parse(swapped)) != canonical_hash(parse(b)));
  std::string f32 = fam::kGatedMlp;
  f32.replace(f32.find("save O: f16"), 11, "save O: f32");
  CHECK(canonical_hash(parse(f32)) != canonical_hash(parse(fam::kGatedMlp)));
}

TEST_CASE("maps with open choice variables", "[sgraph][text][map]") {
  const char* open = R"(input X: f32[n, d]
input W: f32[d, m]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: ?a->g1, loop: 1}
  w = load W map {grid: 1->g1, loop: ?b}
  y = matmul(x, w)
  acc = sum_accumulate(y)
  save O: f32 = acc map {grid: ?c->g1, loop: -}
output O
)";
  SGraph g = parse(open);
  CHECK_FALSE(g.is_concrete());
  CHECK(g.variables() == std::vector<std::string>{"a", "b", "c"});
  CHECK(strip_comments(print(g)) == open);
  CHECK(validate(g).empty());  // nothing decidable is wrong yet
  CHECK_THROWS_WITH(g.concretized({{"a", -1}}), Catch::Contains("no value for map choice variable ?b"));
  SGraph c = g.concretized({{"a", Choice::kNone}, {"b", 0}, {"c", 1}});
  CHECK(c.is_concrete());
  CHECK(validate(c).empty());
  CHECK_THAT(print(c), Catch::Contains("x = load X map {grid: -, loop: 1}"));
  CHECK_THAT(canonical_text(g), Catch::Contains("t2 = load X map {grid: ?c2->g1, loop: 1}"));
  // A wrong choice shows up once concrete: inner dims that can only agree when g1 = 1.
  Analysis wrong = analyze(g.concretized({{"a", 1}, {"b", 0}, {"c", 1}}));
  REQUIRE(wrong.constraints.size() == 4);
  CHECK(wrong.constraints[3].str() == "d/g1/F1 == d/F1 (kernel 0: op 2 'y' = matmul: inner dims d/g1/F1 and d/F1)");
}

TEST_CASE("parse errors say where and what was expected", "[sgraph][text][parse]") {
  auto error = [](const std::string& text) {
    try {
      parse(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("input X f32[n]\n") == "line 1, col 9: expected ':' but found 'f32'");
  CHECK(error("input X: f64[n]\n") == "line 1, col 10: expected a dtype (f32, f16, bf16) but found 'f64'");
  CHECK(error("kernel 1: O: f32 = exp(X)\n") == "line 1, col 8: expected kernel number 0 (kernels are numbered in order) but found '1'");
  CHECK(error("input X: f32[n]\nkernel 0: custom grid=[g] loop=F\n  y = exp(z)\n") ==
        "line 3, col 11: expected a value defined earlier in this kernel but found 'z'");
  CHECK(error("input X: f32[n]\nkernel 0: custom grid=[g]\n  x = load X map {grid: 0->h, loop: -}\n") ==
        "line 3, col 28: expected a grid dim of this kernel but found 'h'");
  CHECK(error("input X: f32[n]\nkernel 0: custom grid=[g]\n  x = load X map {grid: 0->g, loop: -}\n  x = exp(x)\n") ==
        "line 4, col 3: expected a new value name ('x' is defined earlier in this kernel) but found 'x'");
  CHECK(error("  x = exp(y)\n") == "line 1, col 3: expected 'input', 'kernel' or 'output' but found 'x'");
  CHECK(error("input X: f32[n] $\n") == "line 1, col 17: unexpected character '$'");
  CHECK(error("input X: f32[n]\nkernel 0: custom grid=[g]\n  y = frobnicate(x)\n") ==
        "line 3, col 7: expected an op name (matmul, add, exp, sum, …) or an accumulator (sum_accumulate, max_accumulate, "
        "rms_accumulate) but found 'frobnicate'");
}

TEST_CASE("the families in docs/sgraph.md are printed text that round-trips", "[sgraph][text][docs]") {
  std::ifstream in(std::string(PRISM_SOURCE_DIR) + "/docs/sgraph.md");
  REQUIRE(in);
  std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int blocks = 0;
  for (size_t at = 0; (at = doc.find("```\ninput ", at)) != std::string::npos;) {
    size_t begin = at + 4, end = doc.find("```", begin);
    std::string block = doc.substr(begin, end - begin);
    SGraph g = parse(block);
    CHECK(validate(g).empty());
    CHECK(print(g) == block);
    ++blocks;
    at = end + 3;
  }
  CHECK(blocks == 4);
}

TEST_CASE("views and constants print, parse back and key the canonical form", "[sgraph][text][views]") {
  const std::string text = R"(input g: f32[d]
input W: f32[m, d]
kernel 0: custom grid=[g1]
  gg = load g view [-, 0] map {grid: -, loop: -}
  w = load W view [1, 0] map {grid: 1->g1, loop: -}
  c = const(1e-06)
  k = const((d/2))
  m = const((-0.125))
  a = mul(gg, c)
  b = div(a, k)
  e = mul(b, m)
  y = matmul(e, w)
  save O: f32 = y map {grid: 1->g1, loop: -}
output O
)";
  SGraph g = parse(text);
  CHECK(strip_comments(print(g)) == text);
  CHECK(validate(g).empty());
  CHECK_THAT(print(g), Catch::Contains("# f32[1, d]") && Catch::Contains("# f32[d, m/g1]") && Catch::Contains("# f32[]"));
  // A different view or constant is a different family.
  std::string other = text;
  other.replace(other.find("const(1e-06)"), 12, "const(1e-05)");
  CHECK(canonical_hash(parse(other)) != canonical_hash(g));
  // A view must read every tensor dim once.
  std::string bad = text;
  bad.replace(bad.find("view [1, 0]"), 11, "view [1, 1]");
  CHECK_THAT(validate(parse(bad)).front(), Catch::Contains("view [1, 1] must read each of the tensor's 2 dims once"));
}

TEST_CASE("sgraph text: a library kernel reads its inputs through views; only a matmul or a reshape may", "[sgraph][library]") {
  const std::string text = R"(input X: f32[n, d]
input W: f32[m, d]
kernel 0: O: f32 = matmul(X, W view [1, 0])
output O
)";
  sgraph::SGraph g = sgraph::parse(text);
  REQUIRE(g.kernels[0].library.views.size() == 2);
  CHECK(g.kernels[0].library.views[0].empty());
  CHECK(g.kernels[0].library.views[1] == std::vector<int>{1, 0});
  CHECK_THAT(sgraph::print(g), Catch::Contains("kernel 0: O: f32 = matmul(X, W view [1, 0])"));
  CHECK(sgraph::parse(sgraph::print(g)).kernels[0].library.views == g.kernels[0].library.views);
  CHECK(sgraph::analyze(g).ok());
  // Without views the text has none.
  CHECK(sgraph::parse("input X: f32[n, d]\ninput W: f32[d, m]\nkernel 0: O: f32 = matmul(X, W)\noutput O\n").kernels[0].library.views.empty());
  sgraph::Analysis bad = sgraph::analyze(sgraph::parse("input X: f32[n, d]\nkernel 0: O: f32 = exp(X view [1, 0])\noutput O\n"));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.errors.front(), Catch::Contains("only a library matmul or a reshape reads its inputs through views"));
  bad = sgraph::analyze(sgraph::parse("input X: f32[n, d]\ninput W: f32[m, d]\nkernel 0: O: f32 = matmul(X, W view [1, 1])\noutput O\n"));
  REQUIRE_FALSE(bad.ok());
}

TEST_CASE("split and concat print their axis, parts and index, parse back and key the canonical form", "[sgraph][text][rotary]") {
  SGraph g = parse(fam::kRotary);
  CHECK(validate(g).empty());
  const std::string text = print(g);
  CHECK_THAT(text, Catch::Contains("x1 = split(x, axis=2, parts=2, index=0)") && Catch::Contains("r = concat(n2, x1, axis=2)") &&
                       Catch::Contains("# f32[h/g1, s/g2, e/2]"));
  CHECK(canonical_hash(parse(text)) == canonical_hash(g));
  // The other half, or the halves in the other order, is another family.
  std::string other = fam::kRotary;
  other.replace(other.find("parts=2, index=0"), 16, "parts=2, index=1");
  CHECK(canonical_hash(parse(other)) != canonical_hash(g));
  std::string swapped = fam::kRotary;
  swapped.replace(swapped.find("concat(n2, x1"), 13, "concat(x1, n2");
  CHECK(canonical_hash(parse(swapped)) != canonical_hash(g));
  CHECK_THROWS_WITH(parse(std::string(fam::kRotary).replace(std::string(fam::kRotary).find("parts=2"), 7, "part=2")),
                    Catch::Contains("an attribute (axis, keepdims, parts, index, shape, perm)"));
}
