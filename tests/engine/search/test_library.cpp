// Library kernels in families (library_cut.h, compose.h, library_search.h): a program cut at a
// matmul by a weight, its prologue and epilogue searched on their own and put around a vendor
// matmul; every composite matches the reference interpreter.
#include <catch2/catch.hpp>

#include <algorithm>

#include "../interp_helpers.h"
#include "../sgraph/sgraph_helpers.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/push_transposes.h"
#include "engine/search/library_cut.h"
#include "engine/search/library_search.h"
#include "engine/sgraph/instantiate.h"
#include "search_helpers.h"

using namespace prism;

namespace {

// Written as PyTorch models write them: eps and a gain, nn.Linear's [out, in] weights, a bias.
const char* kLlama =
    "program llama(X: f32[n, d], g: f32[d], W: f32[m, d]) {\n  Y = rms_norm(X, eps=1e-6) * g\n  return matmul(Y, transpose(W))\n}\n";
const char* kGeluLinear = "program gelu_linear(X: f32[n, d], W: f32[h, d], b: f32[h]) {\n  return gelu(matmul(X, transpose(W)) + b)\n}\n";
// RMSNorm'd rows gated by two projections (Llama's MLP input side), the same way.
const char* kRmsGated =
    "program rms_gated(X: f32[n, d], g: f32[d], Wu: f32[h, d], Wg: f32[h, d]) {\n"
    "  Y = rms_norm(X, eps=1e-5) * g\n  return matmul(Y, transpose(Wu)) * matmul(Y, transpose(Wg))\n}\n";
const char* kPlain = "program plain(X: f32[n, d], W: f32[d, m]) {\n  return matmul(X, W)\n}\n";
const char* kAttention =
    "program attn(Q: f32[B, q, e], K: f32[B, s, e], V: f32[B, s, e]) {\n"
    "  return matmul(softmax(matmul(Q, transpose(K)) * 0.125, axis=-1), V)\n}\n";

std::vector<search::LibraryCut> cuts_of(const char* text, const char* name) {
  return search::library_cuts(push_transposes(test::lowered_text(text, name)));
}

bool has_library_kernel(const sgraph::SGraph& g) {
  return std::any_of(g.kernels.begin(), g.kernels.end(), [](const sgraph::Kernel& k) { return !k.custom; });
}

int64_t custom_kernels(const sgraph::SGraph& g) {
  return std::count_if(g.kernels.begin(), g.kernels.end(), [](const sgraph::Kernel& k) { return k.custom; });
}

// Two workers and room to finish: the searches here complete well within it.
SearchLimits test_limits() {
  SearchLimits limits;
  limits.threads = 2;
  limits.budget_s = 120;
  return limits;
}

// The composite at `dims` with every parameter at `size`, against the reference.
double composite_error(const Program& program, const sgraph::SGraph& g, const DimBindings& dims, int64_t size) {
  DimBindings sizes;
  for (const std::string& p : g.parameters()) sizes[p] = size;
  sgraph::Instance inst = sgraph::instantiate(g, dims, sizes, sgraph::TileBudget{int64_t(1) << 30});
  auto inputs = test::random_inputs(g, dims, 5);
  return test::relative_error(sgraph::evaluate(inst, inputs).at(0), interpret(program, dims, inputs).at(0));
}

}  // namespace

TEST_CASE("library cuts: a matmul by a weight splits into prologue, vendor matmul and epilogue", "[search][library]") {
  std::vector<search::LibraryCut> llama = cuts_of(kLlama, "llama");
  REQUIRE(llama.size() == 1);
  CHECK(llama[0].prologue.has_value());
  CHECK_FALSE(llama[0].epilogue.has_value());
  CHECK(llama[0].left == "Y");
  CHECK(llama[0].right == "W");
  CHECK(llama[0].right_view == std::vector<int>{1, 0});
  CHECK(llama[0].prologue->outputs.size() == 1);
  CHECK(llama[0].prologue->inputs.size() == 2);  // X and g: W is the library's
  CHECK_THAT(llama[0].text, Catch::Contains("matmul(Y, W^T)"));

  std::vector<search::LibraryCut> gelu = cuts_of(kGeluLinear, "gelu_linear");
  REQUIRE(gelu.size() == 1);
  CHECK_FALSE(gelu[0].prologue.has_value());
  REQUIRE(gelu[0].epilogue.has_value());
  CHECK(gelu[0].left == "X");
  CHECK(gelu[0].left_view.empty());
  // The epilogue reads b and the product, not X or W.
  std::vector<std::string> inputs;
  for (int id : gelu[0].epilogue->inputs) inputs.push_back(gelu[0].epilogue->value(id).name);
  CHECK(inputs == std::vector<std::string>{"b", gelu[0].product});

  // Y projected twice: the epilogue of a cut at either projection reads the prologue's Y (and
  // the product, and the other weight), not X and g again.
  std::vector<search::LibraryCut> gated = cuts_of(kRmsGated, "rms_gated");
  REQUIRE(gated.size() == 2);
  for (const search::LibraryCut& cut : gated) {
    REQUIRE(cut.prologue.has_value());
    REQUIRE(cut.epilogue.has_value());
    CHECK(cut.left == "Y");
    std::vector<std::string> names;
    for (int id : cut.epilogue->inputs) names.push_back(cut.epilogue->value(id).name);
    std::sort(names.begin(), names.end());
    std::vector<std::string> want = {"Y", cut.product, cut.right == "Wu" ? "Wg" : "Wu"};
    std::sort(want.begin(), want.end());
    CHECK(names == want);
  }

  // A matmul of two inputs that is the output is the eager baseline; attention's batched
  // products of computed values are the fused attention kernels' work.
  CHECK(cuts_of(kPlain, "plain").empty());
  CHECK(cuts_of(kAttention, "attn").empty());
}

TEST_CASE("library families: found, proved by their parts, equal to the program", "[search][library]") {
  SearchLimits limits = test_limits();
  for (auto [text, name, dims] : {std::tuple{kLlama, "llama", DimBindings{{"n", 4}, {"d", 32}, {"m", 12}}},
                                  std::tuple{kGeluLinear, "gelu_linear", DimBindings{{"n", 6}, {"d", 16}, {"h", 20}}}}) {
    INFO(name);
    const Program program = test::lowered_text(text, name);
    SearchResult r = search::search_program(program, limits);
    int library = 0;
    for (const Candidate& c : r.candidates) {
      if (!has_library_kernel(*c.graph)) continue;
      ++library;
      INFO(c.text());
      CHECK_THAT(c.summary, Catch::StartsWith("library matmul"));
      CHECK_THAT(c.proof, Catch::Contains("logue"));
      CHECK_THAT(c.proof, Catch::Contains("proved"));
      for (int64_t size : {1, 2}) CHECK(composite_error(program, *c.graph, dims, size) < 1e-4);
    }
    CHECK(library >= 1);
    CHECK(library <= int(search::kLibraryPartFamilies));
    SearchLimits one = limits;  // a vendor matmul and a fused kernel are two kernels
    one.max_kernels = 1;
    SearchResult fused = search::search_program(program, one);
    CHECK(std::none_of(fused.candidates.begin(), fused.candidates.end(), [](const Candidate& c) { return has_library_kernel(*c.graph); }));
    limits.library_kernels = 0;
    SearchResult none = search::search_program(program, limits);
    CHECK(std::none_of(none.candidates.begin(), none.candidates.end(), [](const Candidate& c) { return has_library_kernel(*c.graph); }));
    limits.library_kernels = SearchLimits{}.library_kernels;
  }
}

TEST_CASE("library families: with two allowed, SwiGLU's gate and up projections are both vendor matmuls beside one fused kernel", "[search][library]") {
  const char* swiglu =
      "program swiglu(X: f32[n, d], Wg: f32[h, d], Wu: f32[h, d], Wd: f32[d, h]) {\n"
      "  H = silu(matmul(X, transpose(Wg))) * matmul(X, transpose(Wu))\n  return matmul(H, transpose(Wd))\n}\n";
  const Program program = test::lowered_text(swiglu, "swiglu");
  SearchLimits limits = test_limits();
  auto vendor_matmuls = [](const sgraph::SGraph& g) {
    return std::count_if(g.kernels.begin(), g.kernels.end(), [](const sgraph::Kernel& k) { return k.vendor_matmul(); });
  };
  // One allowed: never two.
  limits.library_kernels = 1;
  SearchResult one = search::search_program(program, limits);
  CHECK(std::none_of(one.candidates.begin(), one.candidates.end(), [&](const Candidate& c) { return vendor_matmuls(*c.graph) > 1; }));
  limits.library_kernels = 2;
  SearchResult two = search::search_program(program, limits);
  int found = 0;
  for (const Candidate& c : two.candidates) {
    if (vendor_matmuls(*c.graph) < 2) continue;
    ++found;
    INFO(c.text());
    CHECK(custom_kernels(*c.graph) <= 1);
    CHECK_THAT(c.proof, Catch::Contains("Epilogue") && Catch::Contains("proved"));
    for (int64_t size : {1, 2}) CHECK(composite_error(program, *c.graph, {{"n", 4}, {"d", 16}, {"h", 24}}, size) < 1e-4);
  }
  CHECK(found >= 1);
}

TEST_CASE("library families: by default a prologue, a vendor matmul and a fused epilogue make one family (three kernels)", "[search][library]") {
  // Cut at the up projection: the RMSNorm is the prologue (Y), the vendor matmul Y @ Wu^T, and
  // the epilogue Y @ Wg^T * t one fused kernel.
  const Program program = test::lowered_text(kRmsGated, "rms_gated");
  SearchLimits limits = test_limits();
  auto three = [](const sgraph::SGraph& g) { return has_library_kernel(g) && custom_kernels(g) == 2; };
  const SearchResult r = search::search_program(program, limits);
  std::vector<const Candidate*> found;
  for (const Candidate& c : r.candidates)
    if (three(*c.graph)) found.push_back(&c);
  REQUIRE_FALSE(found.empty());
  for (const Candidate* c : found) {
    INFO(c->text());
    CHECK_THAT(c->summary, Catch::StartsWith("library matmul") && Catch::Contains("after 1 custom kernel"));
    CHECK_THAT(c->proof, Catch::Contains("Prologue") && Catch::Contains("Epilogue"));
    for (int64_t size : {1, 2}) CHECK(composite_error(program, *c->graph, {{"n", 4}, {"d", 16}, {"h", 12}}, size) < 1e-4);
  }
  // By default two vendor matmuls: both projections, the RMSNorm before them (computed once) and
  // the product after, which count as three kernels too.
  auto vendor_matmuls = [](const sgraph::SGraph& g) {
    return std::count_if(g.kernels.begin(), g.kernels.end(), [](const sgraph::Kernel& k) { return k.vendor_matmul(); });
  };
  int both = 0;
  for (const Candidate* c : found) {
    if (vendor_matmuls(*c->graph) != 2) continue;
    ++both;
    INFO(c->text());
    CHECK_THAT(c->summary, Catch::Contains("then library matmul"));
  }
  CHECK(both >= 1);
  limits.max_kernels = 2;  // then the vendor matmul and the two fused kernels are one too many
  SearchResult two = search::search_program(program, limits);
  CHECK(std::none_of(two.candidates.begin(), two.candidates.end(), [&](const Candidate& c) { return three(*c.graph); }));
  CHECK(two.stats.stop_reason == SearchStop::Complete);
}
