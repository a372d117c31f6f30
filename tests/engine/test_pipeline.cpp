// The pipeline (engine/pipeline.h; docs/architecture.md, "The pipeline"): one table of the passes
// in order, and every pass in it leaves what `--dump-after` shows, from a program's text to a
// kernel's source.
#include <catch2/catch.hpp>

#include <set>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/pipeline.h"
#include "engine/workspace/workspace.h"
#include "support/subprocess.h"

using namespace prism;
using pipeline::Pass;

namespace {

// An imported Llama MLP block at fixed widths (from_torch names only the token count).
const char* kImported =
    "program imported(x: f32[n, 64], g: f32[64], Wg: f32[96, 64], Wu: f32[96, 64], Wd: f32[64, 96]) {\n"
    "  y = x * rsqrt(mean(x ** 2, axis=-1, keepdims=true) + 1e-6) * g\n"
    "  return x + (silu(y @ Wg.T) * (y @ Wu.T)) @ Wd.T\n}\n";

struct Dumped {
  std::vector<std::string> items;
  size_t dropped = 0;
};

// What `pass` leaves when `program` (opened from `text`) is searched, or its kernel made at
// `bindings` on the CPU.
Dumped dumped(const std::string& program, const std::string& text, Pass pass, const std::map<std::string, int64_t>& bindings,
              size_t limit = 100) {
  test::TempDir data;
  Workspace ws;
  ws.set_storage(data.path(), data.path() + "/cache");
  ws.open("untitled:" + program, text, 1);
  pipeline::Dump dump(pass, limit);
  if (pipeline::stage_of(pass) == pipeline::Stage::Search) ws.search(program, SearchLimits{}, nullptr, {}, &dump);
  else ws.kernel_source(program, 0, bindings, backend::cpu::kTarget, nullptr, &dump);
  return {dump.items(), dump.dropped()};
}

bool all_contain(const std::vector<std::string>& items, const std::string& word) {
  return !items.empty() && std::all_of(items.begin(), items.end(), [&](const std::string& s) { return s.find(word) != std::string::npos; });
}

}  // namespace

TEST_CASE("the pipeline's table lists every pass once, in order, by names that parse back", "[pipeline]") {
  const std::vector<pipeline::PassInfo>& passes = pipeline::passes();
  REQUIRE(passes.size() == size_t(Pass::Print) + 1);
  std::set<std::string> names;
  for (size_t i = 0; i < passes.size(); ++i) {
    CHECK(passes[i].pass == Pass(i));
    CHECK(pipeline::parse_pass(passes[i].name) == passes[i].pass);
    CHECK(names.insert(passes[i].name).second);
    CHECK(std::string(passes[i].function).size() > 0);
  }
  // The search's passes come first, then the making of one kernel's.
  CHECK(pipeline::pass_names(pipeline::Stage::Search) == "parse, normalize, name-sizes, search-form, saturate, enumerate, prune, verify, fix-sizes");
  CHECK(pipeline::pass_names(pipeline::Stage::Kernel) == "instantiate, lower, print");
  CHECK_FALSE(pipeline::parse_pass("codegen"));
}

TEST_CASE("every pass leaves what --dump-after shows, from the text to the source", "[pipeline][search]") {
  const std::string rms = test::read_example("rms_linear");
  const std::map<std::string, int64_t> at{{"n", 8}, {"d", 64}};
  CHECK(all_contain(dumped("rms_linear", rms, Pass::Parse, at).items, "program rms_linear("));
  CHECK(all_contain(dumped("rms_linear", rms, Pass::Normalize, at).items, "t1 = rms(t0, axis=-1)"));  // rms_norm as its primitives
  CHECK(all_contain(dumped("rms_linear", rms, Pass::SearchForm, at).items, "matmul("));
  CHECK(all_contain(dumped("rms_linear", rms, Pass::Saturate, at).items, "e-nodes"));
  const Dumped computations = dumped("rms_linear", rms, Pass::Enumerate, at);
  CHECK(all_contain(computations.items, "matmul("));
  CHECK(all_contain(dumped("rms_linear", rms, Pass::Prune, at).items, "kernel 0: custom"));
  const Dumped verified = dumped("rms_linear", rms, Pass::Verify, at);
  CHECK(all_contain(verified.items, "# "));  // each with its summary
  CHECK(verified.items.size() == dumped("rms_linear", rms, Pass::FixSizes, at).items.size());
  CHECK(all_contain(dumped("rms_linear", rms, Pass::Instantiate, at).items, "# at d=64 n=8"));
  CHECK(all_contain(dumped("rms_linear", rms, Pass::Lower, at).items, "tensor X: f16[8, 64] (input)"));
  CHECK(all_contain(dumped("rms_linear", rms, Pass::Print, at).items, "prism_entry"));

  // Fixed sizes are dims for the search and numbers again after it.
  CHECK(all_contain(dumped("imported", kImported, Pass::NameSizes, at).items, "f32[n, __s64]"));
  const Dumped fixed = dumped("imported", kImported, Pass::FixSizes, at);
  REQUIRE_FALSE(fixed.items.empty());
  for (const std::string& family : fixed.items) CHECK(family.find("__s") == std::string::npos);

  // At most `limit` items are kept; the rest are counted.
  const Dumped two = dumped("rms_linear", rms, Pass::Enumerate, at, 2);
  CHECK(two.items.size() == 2);
  CHECK(two.dropped + 2 == computations.items.size() + computations.dropped);
}
