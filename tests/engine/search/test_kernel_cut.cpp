// Kernel cuts (kernel_cut.h, kernel_search.h, compose_pieces): a program cut where a computed
// value's layout changes, or before a matmul chained through a weight, its pieces searched on
// their own and run one after another; every composite matches the reference interpreter, on
// masks with -inf as attention uses them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <regex>

#include "../interp_helpers.h"
#include "../sgraph/sgraph_helpers.h"
#include "engine/backend/lower.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/push_transposes.h"
#include "engine/ir/print.h"
#include "engine/search/kernel_cut.h"
#include "engine/search/kernel_search.h"
#include "engine/sgraph/instantiate.h"
#include "engine/sgraph/parse.h"
#include "engine/sgraph/print.h"
#include "engine/sgraph/validate.h"
#include "search_helpers.h"

using namespace prism;

namespace {

// examples/layers/llama_attention.prism without the mask and the residual: the two layout changes.
const char* kHeads =
    "program heads(X: f32[n, d], Wq: f32[h * e, d], K: f32[h, s, e], V: f32[h, s, e], Wo: f32[d, h * e]) {\n"
    "  Q = transpose(reshape(matmul(X, transpose(Wq)), [n, h, e]), perm=[1, 0, 2])\n"
    "  A = matmul(softmax(matmul(Q, transpose(K, perm=[0, 2, 1])) * 0.125), V)\n"
    "  O = reshape(transpose(A, perm=[1, 0, 2]), [n, h * e])\n"
    "  return matmul(O, transpose(Wo))\n}\n";
// A transpose of a computed value that the next piece reads as a view: no copy.
const char* kTransposed =
    "program transposed(X: f32[n, d], W: f32[d, m], V: f32[n, k]) {\n"
    "  return matmul(transpose(exp(matmul(X, W))), V)\n}\n";
// A reshape that is the program's output: the graph's output is the piece's value in place.
const char* kReturned = "program returned(X: f32[n, d], W: f32[d, m]) {\n  return reshape(exp(matmul(X, W)), [n * m])\n}\n";
// A transpose that is the program's output: no piece can return it.
const char* kReturnedTransposed = "program returned_t(X: f32[n, d], W: f32[d, m]) {\n  return transpose(exp(matmul(X, W)))\n}\n";
// Grouped-query attention as the importer writes it (docs/python.md, "Grouped heads"): the query
// heads, an input, split into 2 groups of 2; the keys, computed (a rotary product), and the
// values at [2, 1], broadcast over each group; the output merged back into heads and returned.
// Only the cache's length is a dim: the search of each symbolic dim more takes seconds.
const char* kGrouped =
    "program grouped(Q: f32[4, 2, 4], K: f32[2, s, 4], C: f32[s, 4], V: f32[2, s, 4], M: f32[2, s]) {\n"
    "  q = reshape(Q, [2, 2, 2, 4])\n"
    "  kc = reshape(K * C, [2, 1, s, 4])\n"
    "  S = q @ transpose(kc, perm=[0, 1, 3, 2]) * 0.5 + M\n"
    "  E = exp(S - max(S, axis=-1))\n"
    "  return reshape(E / sum(E, axis=-1) @ reshape(V, [2, 1, s, 4]), [4, 2, 4])\n}\n";

std::vector<search::KernelCut> cuts_of(const std::string& text, const std::string& name) {
  return search::kernel_cuts(push_transposes(test::lowered_text(text, name)));
}

Program layer(const std::string& name) { return test::lowered_text(test::layer_text(name), name); }

std::vector<std::string> input_names(const Program& p) {
  std::vector<std::string> names;
  for (int id : p.inputs) names.push_back(p.value(id).name);
  return names;
}

SearchLimits test_limits() {
  SearchLimits limits;
  limits.threads = 2;
  limits.budget_s = 120;
  return limits;
}

// A causal mask as attention adds it: 0 on and below the diagonal (aligned to the last rows of
// the cache), -inf above; the first row masked whole where `whole_row`.
Tensor causal_mask(int64_t n, int64_t s, bool whole_row) {
  Tensor m = random_tensor(DType::F32, {n, s}, 1, "M");
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < s; ++j) m.data[size_t(i * s + j)] = (j > s - n + i || (whole_row && i == 0)) ? -INFINITY : 0.0f;
  return m;
}

// The composite at `dims`, every parameter at `size`, against the reference on the same inputs.
double composite_error(const Program& program, const sgraph::SGraph& g, const DimBindings& dims, int64_t size,
                       const std::map<std::string, Tensor>& given = {}) {
  DimBindings sizes;
  for (const std::string& p : g.parameters()) sizes[p] = size;
  sgraph::Instance inst = sgraph::instantiate(g, dims, sizes, sgraph::TileBudget{int64_t(1) << 30});
  auto inputs = test::random_inputs(g, dims, 5);
  for (const auto& [name, t] : given) inputs[name] = t;
  const std::vector<Tensor> got = sgraph::evaluate(inst, inputs), want = interpret(program, dims, inputs);
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t k = 0; k < got.size(); ++k) worst = std::max(worst, test::relative_error(got[k], want[k]));
  return worst;  // over every output
}

}  // namespace

TEST_CASE("kernel cuts: attention's head reshapes cut it into three pieces, with copies where a reshape is", "[search][kernel-cut]") {
  const std::vector<search::KernelCut> cuts = cuts_of(kHeads, "heads");
  REQUIRE(cuts.size() == 1);
  const search::KernelCut& cut = cuts[0];
  CHECK(cut.required);
  REQUIRE(cut.pieces.size() == 3);
  REQUIRE(cut.copies.size() == 2);
  // Piece 1 projects; the copy reshapes its rows into heads, which piece 2 reads transposed.
  CHECK(input_names(cut.pieces[0]) == std::vector<std::string>{"X", "Wq"});
  CHECK(cut.copies[0].view.empty());
  const std::vector<std::string> attention = input_names(cut.pieces[1]);
  CHECK(std::count_if(attention.begin(), attention.end(), [](const std::string& s) { return s.rfind("cut_", 0) == 0; }) == 1);
  // The heads' output moved back and merged by one copy that reads it transposed.
  CHECK(cut.copies[1].view == std::vector<int>{1, 0, 2});
  CHECK(input_names(cut.pieces[2]) == std::vector<std::string>{"Wo", "cut_O"});
  CHECK_THAT(cut.text(), Catch::Contains("reshaped in place, read transposed") && Catch::Contains("at A (transposed, reshaped: a copy)"));

  const std::vector<search::KernelCut> view = cuts_of(kTransposed, "transposed");
  REQUIRE(view.size() == 1);
  CHECK(view[0].copies.empty());
  CHECK_THAT(view[0].text(), Catch::Contains("read transposed"));
  CHECK(cuts_of(kReturnedTransposed, "returned_t").empty());
  const std::vector<search::KernelCut> returned = cuts_of(kReturned, "returned");
  REQUIRE(returned.size() == 1);
  CHECK(returned[0].pieces.size() == 1);
  CHECK(returned[0].text() == "at t1 (returned reshaped in place)");
}

TEST_CASE("kernel cut families: grouped-query attention reads its query heads and keys in place and returns its heads in place",
          "[search][kernel-cut]") {
  // The keys computed (a rotary product), or read from a cache as they are: a view of an input
  // with a unit axis, read transposed.
  const std::string cached = std::regex_replace(kGrouped, std::regex(R"(K \* C)"), "K");
  const bool from_cache = GENERATE(false, true);
  INFO((from_cache ? "keys from a cache" : "keys computed"));
  const Program program = push_transposes(test::lowered_text(from_cache ? cached : kGrouped, "grouped"));
  const std::vector<search::KernelCut> cuts = search::kernel_cuts(program);
  REQUIRE(cuts.size() == 1);
  CHECK_THAT(cuts[0].text(), Catch::Contains("at Q (reshaped in place)") && Catch::Contains("(returned reshaped in place)"));
  CHECK(cuts[0].pieces.size() == (from_cache ? 1 : 2));  // [the keys' product], attention: the query heads are an input's
  const SearchResult r = search::search_program(program, test_limits());
  REQUIRE(r.candidates.size() >= 2);
  const DimBindings decode = {{"s", 8}}, prefill = {{"s", 4}};
  for (const Candidate& c : r.candidates) {
    INFO(c.text());
    // Every reshape is read in place, the returned one included: no copy kernel, no tensor.
    const sgraph::Analysis a = sgraph::analyze(*c.graph);
    for (const sgraph::Kernel& k : c.graph->kernels)
      if (!k.custom && sgraph::is_layout(k.library.op)) CHECK(sgraph::reshapes_in_place(*c.graph, a, k.library));
    CHECK(c.kernels == sgraph::kernels_run(*c.graph));
    DimBindings sizes;
    for (const std::string& p : c.graph->parameters()) sizes[p] = 1;
    const backend::kir::Program lowered = backend::lower(sgraph::instantiate(*c.graph, prefill, sizes, sgraph::TileBudget{int64_t(1) << 30}), {});
    CHECK(int(lowered.kernels.size()) == c.kernels);
    CHECK(std::none_of(lowered.tensors.begin(), lowered.tensors.end(), [](const backend::kir::Tensor& t) { return t.name.rfind("cut_", 0) == 0 && t.name.find("Q") != std::string::npos; }));
    for (int64_t size : {1, 2}) {
      CHECK(composite_error(program, *c.graph, decode, size, {{"M", causal_mask(2, 8, false)}}) < 1e-4);
      CHECK(composite_error(program, *c.graph, prefill, size, {{"M", causal_mask(2, 4, true)}}) < 1e-4);
    }
  }
}

TEST_CASE("kernel cuts: a program with several outputs is cut at each output, each piece cutting its own heads",
          "[search][kernel-cut][outputs]") {
  // A decoder's projections before its KV cache: queries and keys split into heads and rotated,
  // values as rows; PyTorch appends keys and values to the cache, so all three are outputs.
  const std::string qkv =
      "program qkv(X: f32[n, 64], g: f32[64], Wq: f32[64, 64], Wk: f32[32, 64], Wv: f32[32, 64], C: f32[n, 16]) {\n"
      "  Y = g * (X * rsqrt(mean(X ** 2, axis=-1) + 1e-06))\n"
      "  q = transpose(reshape(Y @ Wq.T, [n, 4, 16]), perm=[1, 0, 2]) * C\n"
      "  k = transpose(reshape(Y @ Wk.T, [n, 2, 16]), perm=[1, 0, 2]) * C\n"
      "  return q, k, Y @ Wv.T\n}\n";
  const Program program = push_transposes(test::lowered_text(qkv, "qkv"));
  const std::vector<search::KernelCut> cuts = search::kernel_cuts(program);
  REQUIRE(cuts.size() == 1);
  CHECK(cuts[0].outputs);
  CHECK(cuts[0].required);  // as written, the heads' reshapes have no family
  REQUIRE(cuts[0].pieces.size() == 3);
  for (const Program& piece : cuts[0].pieces) CHECK(piece.outputs.size() == 1);
  CHECK_THAT(cuts[0].text(), Catch::StartsWith("at each output (q, k, "));
  const SearchResult r = search::search_program(program, test_limits());
  REQUIRE_FALSE(r.candidates.empty());
  for (const Candidate& c : r.candidates) {
    INFO(c.summary);
    CHECK_THAT(c.summary, Catch::StartsWith("3 pieces cut at each output"));
    CHECK(c.graph->outputs.size() == 3);
    CHECK(composite_error(program, *c.graph, {{"n", 4}}, 2) < 1e-4);
  }

  // Without layout changes the cut is a choice: two projections of one row (a decode step's q
  // and v) each split their own columns, beside the program's own two-output families.
  const Program qv = test::lowered_text("program qv(X: f32[n, 64], Wq: f32[64, 64], Wv: f32[32, 64]) {\n  return X @ Wq.T, X @ Wv.T\n}\n", "qv");
  const std::vector<search::KernelCut> choice = search::kernel_cuts(qv);
  REQUIRE(choice.size() == 1);
  CHECK_FALSE(choice[0].required);
  const SearchResult two = search::search_program(qv, test_limits());
  bool whole = false, cut = false, one_row = false;
  for (const Candidate& c : two.candidates) {
    const bool pieces = c.summary.rfind("2 pieces cut at each output", 0) == 0;
    (pieces ? cut : whole) = true;
    if (!pieces) continue;
    CHECK(composite_error(qv, *c.graph, {{"n", 4}}, 2) < 1e-4);
    // At one row, a composite whose every grid has two blocks: both outputs' columns split.
    DimBindings sizes;
    for (const std::string& p : c.graph->parameters()) sizes[p] = 2;
    try {
      sgraph::instantiate(*c.graph, {{"n", 1}}, sizes, sgraph::TileBudget{int64_t(1) << 30});
      one_row = one_row || c.graph->parameters().size() >= 2;
    } catch (const Error&) {
    }
  }
  CHECK(whole);
  CHECK(cut);
  CHECK(one_row);
  // GPT-2's c_attn: one projection split in three, each part an output. A part's piece computes
  // the split whole (its parts are one statement) and returns its own.
  const Program split = test::lowered_text(
      "program qkv(X: f32[n, 32], W: f32[32, 96], b: f32[96]) {\n  q, k, v = split(X @ W + b, 3, axis=-1)\n  return q, k, v\n}\n", "qkv");
  const std::vector<search::KernelCut> parts = search::kernel_cuts(split);
  REQUIRE(parts.size() == 1);
  for (const Program& piece : parts[0].pieces) {
    CHECK(piece.outputs.size() == 1);
    CHECK_NOTHROW(print_program(piece));
  }
  const SearchResult thirds = search::search_program(split, test_limits());
  size_t composites = 0;
  for (const Candidate& c : thirds.candidates)
    if (c.summary.rfind("3 pieces cut at each output", 0) == 0) {
      ++composites;
      CHECK(composite_error(split, *c.graph, {{"n", 4}}, 2) < 1e-4);
    }
  CHECK(composites > 0);
  // Two outputs of one value, or an input returned: no cut.
  CHECK(search::kernel_cuts(test::lowered_text("program same(X: f32[n, d]) {\n  Y = X * 2\n  return Y, Y\n}\n", "same")).empty());
  CHECK(search::kernel_cuts(test::lowered_text("program echo(X: f32[n, d]) {\n  return X * 2, X\n}\n", "echo")).empty());
}

TEST_CASE("kernel cuts: an MLP's down projection may be cut from the rows it reads; a single matmul is not", "[search][kernel-cut]") {
  const std::vector<search::KernelCut> cuts = search::kernel_cuts(push_transposes(layer("llama_mlp_block")));
  REQUIRE(cuts.size() == 1);
  CHECK_FALSE(cuts[0].required);
  REQUIRE(cuts[0].pieces.size() == 2);
  CHECK(input_names(cuts[0].pieces[1]) == std::vector<std::string>{"X", "Wd", "cut_H"});
  CHECK_THAT(cuts[0].text(), Catch::StartsWith("at H, before the matmul"));
  CHECK(search::kernel_cuts(push_transposes(layer("llama_rmsnorm_proj"))).empty());
}

TEST_CASE("kernel cut families: the Llama attention block is found, proved by pieces, equal to the program under -inf masks",
          "[search][kernel-cut]") {
  const Program program = push_transposes(layer("llama_attention"));
  SearchLimits limits = test_limits();
  const SearchResult r = search::search_program(program, limits);
  REQUIRE(r.candidates.size() >= 4);
  CHECK(r.candidates.size() <= search::kKernelCutFamilies);
  const DimBindings decode = {{"n", 2}, {"d", 16}, {"h", 2}, {"e", 4}, {"s", 8}}, prefill = {{"n", 4}, {"d", 16}, {"h", 2}, {"e", 4}, {"s", 4}};
  bool online = false;
  for (const Candidate& c : r.candidates) {
    INFO(c.text());
    CHECK_THAT(c.summary, Catch::StartsWith("3 pieces cut at"));
    CHECK_THAT(c.proof, Catch::Contains("Piece 3") && Catch::Contains("proved"));
    online = online || c.summary.find("online softmax") != std::string::npos;
    // No copy: the queries' reshape and the heads' merge are read in place, the attention piece
    // writing its heads transposed.
    const sgraph::Analysis a = sgraph::analyze(*c.graph);
    for (const sgraph::Kernel& k : c.graph->kernels)
      if (!k.custom && sgraph::is_layout(k.library.op)) CHECK(sgraph::reshapes_in_place(*c.graph, a, k.library));
    CHECK(c.kernels + 2 == int(c.graph->kernels.size()));
    CHECK_THAT(c.summary, Catch::Contains("at A (written transposed, reshaped in place)"));
    for (int64_t size : {1, 2}) {
      CHECK(composite_error(program, *c.graph, decode, size, {{"M", causal_mask(2, 8, false)}}) < 1e-4);
      CHECK(composite_error(program, *c.graph, prefill, size, {{"M", causal_mask(4, 4, true)}}) < 1e-4);
    }
  }
  CHECK(online);  // a piece with a loop over the cache is kept for long caches
  // Without cuts, the program as written has no family, and says why.
  limits.kernel_cuts = 0;
  const SearchResult none = search::search_program(program, limits);
  CHECK(none.candidates.empty());
  CHECK_THAT(none.stats.empty_reason, Catch::Contains("reshape"));
}

TEST_CASE("kernel cut families: the Llama MLP block gains two-kernel families beside its own", "[search][kernel-cut]") {
  const Program program = push_transposes(layer("llama_mlp_block"));
  SearchLimits limits = test_limits();
  const SearchResult r = search::search_program(program, limits);
  int cut = 0;
  for (const Candidate& c : r.candidates) {
    if (c.summary.rfind("2 pieces cut", 0) != 0) continue;
    ++cut;
    INFO(c.text());
    for (int64_t size : {1, 2}) CHECK(composite_error(program, *c.graph, {{"n", 4}, {"d", 16}, {"f", 24}}, size) < 1e-4);
  }
  CHECK(cut >= 2);
  limits.kernel_cuts = 0;
  const SearchResult uncut = search::search_program(program, limits);
  CHECK(uncut.candidates.size() + size_t(cut) == r.candidates.size());
}

TEST_CASE("layout copies: a reshape through a transpose prints, parses, validates and evaluates as the interpreter does",
          "[search][kernel-cut][sgraph]") {
  const std::string text =
      "input A: f32[h, n, e]\n"
      "kernel 0: O: f32 = reshape(A view [1, 0, 2], shape=[n, h * e])\n"
      "output O\n";
  const sgraph::SGraph g = sgraph::parse(text);
  CHECK(sgraph::parse(sgraph::print(g)).kernels.at(0).library.attrs.shape == g.kernels.at(0).library.attrs.shape);
  CHECK(sgraph::analyze(g).ok());
  const std::string program = "program merge(A: f32[h, n, e]) {\n  return reshape(transpose(A, perm=[1, 0, 2]), [n, h * e])\n}\n";
  CHECK(test::family_error(program, text, {{"h", 3}, {"n", 2}, {"e", 5}}, {}) == 0);
  // A view on any other library kernel but a matmul is refused.
  CHECK_FALSE(sgraph::analyze(sgraph::parse("input A: f32[n, m]\nkernel 0: B: f32 = exp(A view [1, 0])\noutput B\n")).ok());
}

TEST_CASE("search: inputs called O and P1 (a family's own tensor names) are read, and the families write apart from them",
          "[search][kernel-cut]") {
  // Attention's output projection as a piece searched alone: its input is the merged heads, O.
  const Program output = test::lowered_text(
      "program out_proj(X: f32[n, d], O: f32[n, h * e], Wo: f32[d, h * e]) {\n  return X + matmul(O, transpose(Wo))\n}\n", "out_proj");
  // A cross-block reduction writes partials P1: an input of that name too.
  const Program partial = test::lowered_text("program partial(P1: f32[n, s]) {\n  return sum(exp(P1), axis=-1)\n}\n", "partial");
  for (const auto& [program, dims] : {std::pair{output, DimBindings{{"n", 4}, {"d", 8}, {"h", 2}, {"e", 4}}},
                                      std::pair{partial, DimBindings{{"n", 4}, {"s", 16}}}}) {
    INFO(program.name);
    const SearchResult r = search::search_program(program, test_limits());
    REQUIRE(r.candidates.size() >= 2);
    for (const Candidate& c : r.candidates) {
      INFO(c.text());
      for (int64_t size : {1, 2}) CHECK(composite_error(program, *c.graph, dims, size) < 1e-4);
    }
  }
}

namespace {

// `blocks` residual blocks as a pre-norm decoder chains them, block `odd` (1-based; 0: none) with
// GELU for SiLU.
std::string chain(int blocks, int odd = 0) {
  std::string text = "program chain(H0: f32[n, d]";
  for (int i = 1; i <= blocks; ++i) text += ", W" + std::to_string(i) + ": f32[d, d]";
  text += ") {\n";
  for (int i = 1; i <= blocks; ++i) {
    const std::string h = "H" + std::to_string(i - 1);
    text += "  H" + std::to_string(i) + " = " + (i == odd ? "gelu" : "silu") + "(rms_norm(" + h + ", eps=1e-6) @ W" + std::to_string(i) + ") + " + h + "\n";
  }
  return text + "  return H" + std::to_string(blocks) + "\n}\n";
}

}  // namespace

TEST_CASE("block cuts: a chain of residual blocks is cut at its residual stream, where attention is not", "[search][kernel-cut]") {
  const std::vector<search::KernelCut> cuts = cuts_of(chain(4), "chain");
  REQUIRE(cuts.size() == 1);
  CHECK(cuts[0].required);
  CHECK(cuts[0].blocks);
  REQUIRE(cuts[0].pieces.size() == 4);
  CHECK(cuts[0].text() == "at H1 (between blocks), at H2 (between blocks), at H3 (between blocks)");
  // Each block reads its weight and the stream the block before it wrote, nothing computed twice.
  CHECK(input_names(cuts[0].pieces[0]) == std::vector<std::string>{"H0", "W1"});
  CHECK(input_names(cuts[0].pieces[3]) == std::vector<std::string>{"W4", "cut_H3"});
  for (const Program& piece : cuts[0].pieces)
    CHECK(std::count_if(piece.values.begin(), piece.values.end(), [](const Value& v) { return v.op == Op::Matmul; }) == 1);
  // Two blocks keep the whole program's search and its optional cut.
  const std::vector<search::KernelCut> two = cuts_of(chain(2), "chain");
  REQUIRE(two.size() == 1);
  CHECK_FALSE(two[0].blocks);
  // Attention's probabilities and its heads' output are each read once: no residual stream, no
  // block cut that would keep online softmax from its kernel.
  const char* attention =
      "program attention(Q: f32[n, e], K: f32[s, e], V: f32[s, e], Wo: f32[e, d], Wu: f32[d, d]) {\n"
      "  return silu(softmax(Q @ transpose(K) * 0.125) @ V @ Wo) @ Wu\n}\n";
  for (const search::KernelCut& c : cuts_of(attention, "attention")) CHECK_FALSE(c.blocks);
}

TEST_CASE("block cut families: blocks alike are searched once, and every composite equals the chain", "[search][kernel-cut]") {
  const Program program = push_transposes(test::lowered_text(chain(3, 2), "chain"));
  const SearchResult r = search::search_program(program, test_limits());
  CHECK(r.stats.stop_reason == SearchStop::Complete);
  REQUIRE(r.candidates.size() >= 2);
  for (const Candidate& c : r.candidates) {
    INFO(c.summary);
    // Blocks 1 and 3 alike, block 2 (GELU) its own: block 3 takes block 1's family, renamed.
    CHECK_THAT(c.summary, Catch::StartsWith("3 pieces cut at H1 (between blocks), at H2 (between blocks)"));
    CHECK_THAT(c.summary, Catch::Contains("piece 3: piece 1's kernels, reading ") && Catch::Contains("W3 for W1"));
    CHECK_THAT(c.summary, !Catch::Contains("piece 2: piece 1's"));
    CHECK_THAT(c.proof, Catch::Contains("Piece 3 (H3) is piece 1 with its inputs renamed"));
    for (int64_t size : {1, 2}) CHECK(composite_error(program, *c.graph, {{"n", 4}, {"d", 16}}, size) < 1e-4);
  }
}
