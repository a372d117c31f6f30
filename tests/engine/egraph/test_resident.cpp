// The workspace's resident e-graph: programs share terms, edits and closes leave the other
// programs' proofs intact, the node cap is reported in words, errors are clear.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "engine/egraph/equivalence.h"
#include "engine/lang/compile.h"
#include "engine/ir/lower_composites.h"
#include "engine/workspace/workspace.h"

using namespace prism;

namespace {

const char* kLinear = R"(
program rms_linear(X: f32[n, d], W: f32[d, d]) {
  return matmul(rms_norm(X), W)
}
)";
const char* kMlp = R"(
program rmsnorm_mlp(X: f32[n, d], Wu: f32[d, d], Wg: f32[d, d]) {
  Y = rms_norm(X)
  return matmul(Y, Wu) * matmul(Y, Wg)
}
)";
const std::string kMlpRewritten = "matmul(X, Wu) / rms(X, axis=-1) * (matmul(X, Wg) / rms(X, axis=-1))";

}  // namespace

TEST_CASE("resident e-graph: shared terms, edits and closes keep other proofs", "[egraph][resident]") {
  Workspace ws;
  ws.open("file:///a.prism", kLinear, 1);
  ws.open("file:///b.prism", kMlp, 1);
  EGraphStats s1 = ws.egraph_stats();
  CHECK(s1.programs == 2);
  CHECK(s1.terms_shared > 0);  // X, rms(X), X / rms(X) are shared
  CHECK(s1.terms_added > 0);
  CHECK(s1.nodes > 0);
  CHECK(s1.classes > 0);
  CHECK(s1.memory_bytes > 0);
  CHECK_FALSE(s1.cap_hit);
  CHECK(s1.rules.size() > 20);

  EquivResult r = ws.equivalent("rmsnorm_mlp", kMlpRewritten, EquivLimits{});
  CHECK(r.verdict == EquivResult::Verdict::Proved);

  // Edit the other program: the proof still holds.
  ws.change("file:///a.prism", "program rms_linear(X: f32[n, d], W: f32[d, d]) {\n  return matmul(X, W) * 2\n}\n", 2);
  CHECK(ws.equivalent("rmsnorm_mlp", kMlpRewritten, EquivLimits{}).verdict == EquivResult::Verdict::Proved);
  CHECK(ws.equivalent("rms_linear", "matmul(X, W) + matmul(X, W)", EquivLimits{}).verdict != EquivResult::Verdict::Refuted);

  // Close it: the remaining program still proves; the e-graph tracks one program.
  ws.close("file:///a.prism");
  EquivResult after = ws.equivalent("rmsnorm_mlp", kMlpRewritten, EquivLimits{});
  CHECK(after.verdict == EquivResult::Verdict::Proved);
  CHECK_FALSE(after.explanation.empty());
  EGraphStats s2 = ws.egraph_stats();
  CHECK(s2.programs == 1);
  uint64_t applications = 0;
  for (const auto& rule : s2.rules) applications += rule.applications;
  CHECK(applications > 0);
}

TEST_CASE("resident e-graph: errors, cancellation and the node cap", "[egraph][resident]") {
  Workspace ws;
  ws.open("file:///b.prism", kMlp, 1);
  CHECK_THROWS_MATCHES(ws.equivalent("nope", "rmsnorm_mlp", EquivLimits{}), Error, Catch::Predicate<Error>([](const Error& e) { return e.kind() == Error::Kind::NotFound; }));
  CHECK_THROWS_MATCHES(ws.equivalent("exp(X)", "exp(X) * 1", EquivLimits{}), Error,
                       Catch::Predicate<Error>([](const Error& e) { return e.kind() == Error::Kind::InvalidArgument; }));
  CHECK_THROWS_MATCHES(ws.equivalent("rmsnorm_mlp", "matmul(X, Q)", EquivLimits{}), Error,
                       Catch::Predicate<Error>([](const Error& e) { return e.kind() == Error::Kind::InvalidArgument; }));

  CancelToken cancel;
  cancel.cancel();
  EquivResult c = ws.equivalent("rmsnorm_mlp", kMlpRewritten, EquivLimits{}, &cancel);
  CHECK(c.verdict == EquivResult::Verdict::NotProved);
  CHECK(c.stop_reason == StopReason::Cancelled);

  // A tiny cap: the proof stops at the node limit, says so, and never claims saturation.
  CompileResult compiled = compile_text(kMlp, "b.prism");
  REQUIRE(compiled.programs.size() == 1);
  Program p = lower_composites(compiled.programs[0]);
  ResidentEGraph small(40);
  small.set_program("rmsnorm_mlp", p);
  EquivResult capped = small.prove(p, compile_expression(compiled.programs[0], kMlpRewritten), EquivLimits{});
  CHECK(capped.verdict == EquivResult::Verdict::NotProved);
  CHECK(capped.stop_reason == StopReason::NodeLimit);
  CHECK(capped.message.find("cap") != std::string::npos);
  EGraphStats st = small.stats();
  CHECK(st.cap_hit);
  CHECK(st.cap_message.find("40") != std::string::npos);
  // Iteration limit: never "saturated".
  ResidentEGraph fresh;
  EquivResult one_iter = fresh.prove(p, compile_expression(compiled.programs[0], kMlpRewritten), EquivLimits{200000, 1, 5.0});
  CHECK(one_iter.verdict == EquivResult::Verdict::NotProved);
  CHECK(one_iter.stop_reason == StopReason::IterLimit);
}

TEST_CASE("resident e-graph: concurrent proofs and edits", "[egraph][resident][threads]") {
  Workspace ws;
  ws.open("file:///b.prism", kMlp, 1);
  std::atomic<int> proved{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 3; ++i)
        if (ws.equivalent("rmsnorm_mlp", kMlpRewritten, EquivLimits{}).verdict == EquivResult::Verdict::Proved) ++proved;
    });
  threads.emplace_back([&] {
    for (int v = 2; v < 8; ++v) {
      ws.open("file:///a.prism", kLinear, v);
      (void)ws.egraph_stats();
      ws.close("file:///a.prism");
    }
  });
  for (auto& th : threads) th.join();
  CHECK(proved == 9);
  CHECK(ws.egraph_stats().programs == 1);
}
