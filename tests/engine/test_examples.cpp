#include <catch2/catch.hpp>


#include "compile_helpers.h"
#include "engine/ir/lower_composites.h"
#include "engine/ir/print.h"
#include "engine/workspace/workspace.h"
#include "support/subprocess.h"

using namespace prism;
using prism::test::read_example;

namespace {

struct Example {
  const char* name;
  std::vector<std::string> output_shape;
  std::map<std::string, int64_t> small;
  std::vector<int64_t> small_shape;
};

const std::vector<Example>& examples() {
  static const std::vector<Example> list = {
      {"rms_linear", {"n", "d"}, {{"n", 2}, {"d", 8}}, {2, 8}},
      {"rmsnorm_mlp", {"n", "d"}, {{"n", 2}, {"d", 8}}, {2, 8}},
      {"gated_mlp", {"n", "d"}, {{"n", 3}, {"d", 4}}, {3, 4}},
      {"attention", {"B", "q", "e"}, {{"B", 2}, {"q", 3}, {"s", 5}, {"e", 4}}, {2, 3, 4}},
      {"qk_norm_attention", {"B", "q", "e"}, {{"B", 2}, {"q", 1}, {"s", 6}, {"e", 4}}, {2, 1, 4}},
      {"lora", {"n", "o"}, {{"n", 4}, {"d", 8}, {"o", 6}, {"r", 2}}, {4, 6}},
      {"gqa", {"h", "g", "e"}, {{"h", 2}, {"g", 4}, {"e", 8}, {"s", 16}}, {2, 4, 8}},
  };
  return list;
}

}  // namespace

TEST_CASE("every example opens cleanly, has the expected shapes and runs", "[engine][examples]") {
  Workspace ws;
  for (const auto& ex : examples()) {
    INFO(ex.name);
    std::string uri = std::string("examples/") + ex.name + ".prism";
    DocumentState st = ws.open(uri, read_example(ex.name), 1);
    for (const auto& d : st.diagnostics) FAIL_CHECK(d.format());
    REQUIRE(st.programs == std::vector<std::string>{ex.name});
    ProgramDetail detail = ws.show(ex.name);
    REQUIRE(detail.summary.outputs.size() == 1);
    CHECK(detail.summary.outputs[0].shape == ex.output_shape);
    CHECK(detail.summary.outputs[0].dtype == "f16");

    // The lowered text is a valid program with the same signature.
    Program again = prism::test::only_program(detail.lowered);
    CHECK(signature(again) == detail.signature);

    RunRequest req;
    req.program = ex.name;
    req.bindings = ex.small;
    req.seed = 3;
    RunResult r = ws.run(req);
    REQUIRE(r.outputs.size() == 1);
    CHECK(r.outputs[0].shape == ex.small_shape);
    CHECK(std::isfinite(r.outputs[0].sum));
    CHECK(r.outputs[0].abs_sum > 0);
  }
  CHECK(ws.programs().size() == examples().size());
}

TEST_CASE("example signatures", "[engine][examples]") {
  Workspace ws;
  ws.open("rms_linear.prism", read_example("rms_linear"), 1);
  ws.open("lora.prism", read_example("lora"), 1);
  CHECK(ws.show("rms_linear").signature == "program rms_linear(X: f16[n, d], W: f16[d, d]) -> f16[n, d]");
  CHECK(ws.show("lora").signature == "program lora(X: f16[n, d], W: f16[d, o], A: f16[d, r], B: f16[r, o]) -> f16[n, o]");
  CHECK(ws.show("rms_linear").lowered ==
        "program rms_linear(X: f16[n, d], W: f16[d, d]) {\n"
        "  t0 = f32(X)  # f32[n, d]\n"
        "  t1 = rms(t0, axis=-1)  # f32[n, 1]\n"
        "  t2 = t0 / t1  # f32[n, d]\n"
        "  Y = f16(t2)  # f16[n, d]\n"
        "  out = matmul(Y, W)  # f16[n, d]\n"
        "  return out\n"
        "}\n");
}
