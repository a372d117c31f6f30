// The causal attention passes the edge suite (issue 45): tuned on the CPU at top 4, no
// row is rejected on a set, its -inf mask sets among them. Every example and example
// layer is held to the same in test_tuner.cpp (check_tuned: no timed row fails any set).
#include <catch2/catch.hpp>

#include "engine/workspace/workspace.h"
#include "support/subprocess.h"

using namespace prism;

TEST_CASE("edge suite: the issue's causal attention passes it on the CPU, every row timed", "[edge]") {
  const std::string text =
      "program causal(Q: f32[B, q, e], K: f32[B, s, e], V: f32[B, s, e], M: f32[q, s]) {\n"
      "  return matmul(softmax(matmul(Q, transpose(K, perm=[0, 2, 1])) / sqrt(e) + M), V)\n}\n";
  test::TempDir data;
  Workspace ws;
  ws.set_storage(data.path(), data / "cache");
  ws.open("untitled:causal", text, 1);
  tune::TuneRequest request;
  request.bindings = {{"B", 2}, {"q", 8}, {"s", 64}, {"e", 16}};
  request.top = 4;  // the online-softmax and flash-decoding families rank among the first
  const tune::TuneResult r = ws.tune("causal", request);
  for (const std::string& note : r.edge_notes) UNSCOPED_INFO("note: " << note);
  bool masked = false;
  for (const std::string& set : r.edge_sets) masked = masked || set.find("-inf") != std::string::npos;
  CHECK(masked);
  for (const tune::TuneRow& row : r.rows) {
    INFO("candidate " << row.candidate << " " << tune::sizes_text(row.sizes) << " (" << row.summary << ")");
    CHECK(row.error == "");
  }
  CHECK(r.best >= 0);
}
