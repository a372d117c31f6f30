// program/equivalent and egraph/stats over the protocol (in process).
#include <catch2/catch.hpp>

#include <algorithm>

#include "in_process.h"

using namespace prism::test;

TEST_CASE("program/equivalent proves, refutes and validates its params", "[protocol][equivalent]") {
  InProcess server;
  auto peer = server.initialized();
  server.result(*peer, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}});

  json proved = server.result(*peer, "program/equivalent", {{"a", "rms_linear"}, {"b", "matmul(X, W) / rms(X)"}});
  CHECK(proved["result"] == "proved");
  CHECK(proved["stopReason"] == "goal reached");
  CHECK_THAT(proved["explanation"].get<std::string>(), Catch::Contains("[matmul-contract]"));
  CHECK_FALSE(proved.contains("counterexample"));
  // Over the reals, then in floats (docs/design.md, "Numerics"): at f16 the product of X and W
  // overflows where the normalized row's does not.
  CHECK(proved["floatingPoint"]["result"] == "refuted");
  CHECK_THAT(proved["floatingPoint"]["detail"].get<std::string>(), Catch::Contains("inf on the right"));
  json same = server.result(*peer, "program/equivalent", {{"a", "rms_linear"}, {"b", "matmul(X / rms(X), W)"}});
  CHECK(same["floatingPoint"]["result"] == "equal");
  CHECK(same["floatingPoint"]["inputs"].get<int>() > 1);
  json logs = server.result(*peer, "program/equivalent", {{"a", "rms_linear"}, {"b", "log(exp(matmul(X, W) / rms(X)))"}});
  CHECK(logs["result"] == "proved");
  CHECK(logs["floatingPoint"]["result"] == "refuted");
  CHECK(logs["floatingPoint"]["set"].is_string());
  CHECK_THAT(logs["floatingPoint"]["detail"].get<std::string>(), Catch::Contains(" on the left and "));
  const json rules = logs["realsOnlyRules"];
  CHECK(std::find(rules.begin(), rules.end(), "log-exp") != rules.end());

  json refuted = server.result(*peer, "program/equivalent", {{"a", "rms_linear"}, {"b", "matmul(X, W) * rms(X)"}});
  CHECK(refuted["result"] == "refuted");
  CHECK(refuted["stopReason"] == "counterexample");
  REQUIRE(refuted.contains("counterexample"));
  CHECK(refuted["counterexample"]["maxAbsDiff"].get<double>() > 0);
  CHECK(refuted["counterexample"]["bindings"].contains("d"));
  CHECK(refuted["counterexample"]["seed"].is_number_integer());

  // Outputs of different shapes: refuted, with no (infinite) distance in the JSON.
  json shapes = server.result(*peer, "program/equivalent", {{"a", "rms_linear"}, {"b", "sum(X, axis=-1)"}});
  CHECK(shapes["result"] == "refuted");
  CHECK_FALSE(shapes["counterexample"].contains("maxAbsDiff"));
  CHECK_THAT(shapes["counterexample"]["detail"].get<std::string>(), Catch::Contains("different shapes"));

  // A tiny iteration budget: not proved, and the stop reason says which limit.
  json capped = server.result(*peer, "program/equivalent",
                              {{"a", "rms_linear"}, {"b", "matmul(X, W) / rms(X)"}, {"limits", {{"iterations", 1}}}});
  if (capped["result"] == "unknown") CHECK(capped["stopReason"] == "iteration limit");

  json bad = server.call(*peer, "program/equivalent", {{"a", "rms_linear"}, {"b", "X"}, {"limits", {{"nodes", 0}}}});
  CHECK(error_code(bad) == -32602);
  CHECK(bad["error"]["data"]["field"] == "limits.nodes");
  json missing = server.call(*peer, "program/equivalent", {{"a", "rms_linear"}});
  CHECK(error_code(missing) == -32602);
  CHECK(missing["error"]["data"]["field"] == "b");
  json unknown = server.call(*peer, "program/equivalent", {{"a", "nope"}, {"b", "X"}});
  CHECK(error_code(unknown) == -32803);
  json broken = server.call(*peer, "program/equivalent", {{"a", "rms_linear"}, {"b", "matmul(W, X, X"}});
  CHECK(error_code(broken) == -32803);
}

TEST_CASE("egraph/stats shows the resident e-graph re-used across edits", "[protocol][egraph]") {
  InProcess server;
  auto peer = server.initialized();
  server.result(*peer, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}, {"version", 1}});
  server.result(*peer, "program/equivalent", {{"a", "rms_linear"}, {"b", "matmul(X, W) / rms(X)"}});
  json before = server.result(*peer, "egraph/stats");
  for (const char* field : {"nodes", "classes", "memoryBytes", "nodeCap", "programs", "termsAdded", "termsShared"})
    CHECK(before[field].is_number_integer());
  CHECK(before["capHit"] == false);
  REQUIRE(before["rules"].is_array());
  REQUIRE_FALSE(before["rules"].empty());
  CHECK(before["rules"][0].contains("matches"));
  CHECK(before["rules"][0].contains("applications"));
  CHECK(before["rules"][0].contains("timeMs"));

  // An edit that keeps most of the program shares its terms instead of adding them again.
  std::string edited = kRmsLinear;
  edited.replace(edited.find("matmul(Y, W)"), 12, "matmul(Y, W) * 2");
  server.result(*peer, "program/change", {{"uri", "untitled:r"}, {"version", 2}, {"changes", {{{"text", edited}}}}});
  server.result(*peer, "program/equivalent", {{"a", "rms_linear"}, {"b", "matmul(X, W) / rms(X) * 2"}});
  json after = server.result(*peer, "egraph/stats");
  CHECK(after["termsShared"].get<uint64_t>() > before["termsShared"].get<uint64_t>());
  CHECK(after["nodes"].get<uint64_t>() >= before["nodes"].get<uint64_t>());

  // A method that takes no params accepts none written as [] (Lua's empty table), not others.
  CHECK(server.call(*peer, "egraph/stats", json::array()).contains("result"));
  CHECK(error_code(server.call(*peer, "egraph/stats", json::array({1}))) == -32602);
}
