// search/run (with $/progress, cancellation and ContentModified) and search/candidates.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "in_process.h"

using namespace prism::test;
using namespace std::chrono_literals;

namespace {

const std::string kLongExample = PRISM_SOURCE_DIR "/examples/qk_norm_attention.prism";
// Bounds under which that search takes seconds on one thread: long enough to interrupt.
const json kLongSearch = {{"program", "qk_norm_attention"},
                          {"limits", {{"maxOps", 16}, {"threads", 1}, {"budgetSeconds", 60}}},
                          {"workDoneToken", "t"}};

// Waits for the `$/progress` begin of token "t", keeping everything else in `server.seen`.
void wait_for_begin(InProcess& server, Peer& peer) {
  for (;;) {
    auto m = peer.next(20s);
    REQUIRE(m);
    if (m->value("method", "") == "$/progress" && (*m)["params"]["value"]["kind"] == "begin") return;
    server.seen.push_back(*m);
  }
}

}  // namespace

TEST_CASE("search/run reports progress and stores candidates for search/candidates", "[protocol][search]") {
  InProcess server;
  auto peer = server.initialized();
  server.result(*peer, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}});

  json none = server.call(*peer, "search/candidates", {{"program", "rms_linear"}});
  CHECK(error_code(none) == -32803);
  CHECK_THAT(none["error"]["message"].get<std::string>(), Catch::Contains("run search/run first"));

  json summary = server.result(*peer, "search/run", {{"program", "rms_linear"}, {"workDoneToken", 7}});
  CHECK(summary["program"] == "rms_linear");
  CHECK(summary["stats"]["stopReason"] == "complete");
  CHECK(summary["stats"]["verified"].get<int>() > 0);
  CHECK(summary["stats"]["fingerprinted"].get<int>() > 0);
  CHECK(summary["stats"].contains("fingerprintRejected"));
  CHECK(summary["candidates"].get<int>() == summary["stats"]["verified"].get<int>());
  // Progress for token 7: begin first, end last, each a $/progress notification.
  std::vector<std::string> kinds;
  for (const auto& m : server.seen)
    if (m.value("method", "") == "$/progress" && m["params"]["token"] == 7) kinds.push_back(m["params"]["value"]["kind"]);
  REQUIRE(kinds.size() >= 2);
  CHECK(kinds.front() == "begin");
  CHECK(kinds.back() == "end");

  json list = server.result(*peer, "search/candidates", {{"program", "rms_linear"}});
  REQUIRE(list["candidates"].size() == summary["candidates"].get<size_t>());
  for (const auto& c : list["candidates"]) {
    CHECK(c["id"].is_number_integer());
    CHECK(c["kernels"].get<int>() >= 1);
    CHECK_THAT(c["text"].get<std::string>(), Catch::Contains("kernel 0:"));
    CHECK(c["verified"] == true);
    CHECK_THAT(c["proof"].get<std::string>(), Catch::Contains("proved"));
    CHECK(c["hash"].get<std::string>().size() == 16);
  }

  // An edit makes the stored result stale.
  std::string edited = kRmsLinear + "\n";
  server.result(*peer, "program/change", {{"uri", "untitled:r"}, {"version", 2}, {"changes", {{{"text", edited}}}}});
  CHECK(error_code(server.call(*peer, "search/candidates", {{"program", "rms_linear"}})) == -32803);
}

TEST_CASE("search/run validates its params", "[protocol][search]") {
  InProcess server;
  auto peer = server.initialized();
  server.result(*peer, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}});
  json bad = server.call(*peer, "search/run", {{"program", "rms_linear"}, {"limits", {{"maxOps", 0}}}});
  CHECK(error_code(bad) == -32602);
  CHECK(bad["error"]["data"]["field"] == "limits.maxOps");
  for (const char* cuts : {"kernelCuts", "libraryKernels"}) {
    json out_of_range = server.call(*peer, "search/run", {{"program", "rms_linear"}, {"limits", {{cuts, 4}}}});
    CHECK(out_of_range["error"]["data"]["field"] == std::string("limits.") + cuts);
    CHECK_THAT(out_of_range["error"]["message"].get<std::string>(), Catch::Contains("must be 0 to 3"));
  }
  json none = server.result(*peer, "search/run", {{"program", "rms_linear"}, {"limits", {{"kernelCuts", 0}, {"threads", 1}}}});
  CHECK(none["limits"]["kernelCuts"] == 0);
  json budget = server.call(*peer, "search/run", {{"program", "rms_linear"}, {"limits", {{"budgetSeconds", -1}}}});
  CHECK(budget["error"]["data"]["field"] == "limits.budgetSeconds");
  json token = server.call(*peer, "search/run", {{"program", "rms_linear"}, {"workDoneToken", json::array()}});
  CHECK(token["error"]["data"]["field"] == "workDoneToken");
  CHECK(error_code(server.call(*peer, "search/run", {{"program", "nope"}})) == -32803);
  CHECK(error_code(server.call(*peer, "search/candidates", {{"program", "nope"}})) == -32803);
}

TEST_CASE("$/cancelRequest stops a search quickly", "[protocol][search][cancel]") {
  InProcess server;
  auto peer = server.initialized();
  server.result(*peer, "program/open", {{"uri", kLongExample}});
  server.send(*peer, {{"jsonrpc", "2.0"}, {"id", "s"}, {"method", "search/run"}, {"params", kLongSearch}});
  wait_for_begin(server, *peer);
  std::this_thread::sleep_for(200ms);
  auto sent = std::chrono::steady_clock::now();
  server.send(*peer, {{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", "s"}}}});
  for (;;) {
    auto m = peer->next(20s);
    REQUIRE(m);
    if (!m->contains("id")) continue;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - sent).count();
    CHECK((*m)["id"] == "s");
    CHECK(error_code(*m) == -32800);
    WARN("search cancelled " << ms << " ms after $/cancelRequest");
    CHECK(ms < 1000);  // the goal is 100 ms; loaded CI machines get slack
    break;
  }
}

TEST_CASE("an edit during a search answers ContentModified", "[protocol][search][cancel]") {
  InProcess server;
  auto peer = server.initialized();
  std::string uri = "file://" + kLongExample;
  server.result(*peer, "program/open", {{"uri", uri}, {"version", 1}});
  server.send(*peer, {{"jsonrpc", "2.0"}, {"id", "s"}, {"method", "search/run"}, {"params", kLongSearch}});
  wait_for_begin(server, *peer);
  json insert = {{"range", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 0}, {"character", 0}}}}},
                 {"text", "# edited\n"}};
  json change = {{"uri", uri}, {"version", 2}, {"changes", json::array({insert})}};
  server.send(*peer, {{"jsonrpc", "2.0"}, {"id", "c"}, {"method", "program/change"}, {"params", change}});
  bool answered = false;
  for (int i = 0; i < 100 && !answered; ++i) {
    auto m = peer->next(20s);
    REQUIRE(m);
    if (m->value("id", json()) == "s") {
      CHECK(error_code(*m) == -32801);
      answered = true;
    }
  }
  CHECK(answered);
}

namespace {

// A valid program of `lines` statements: a matmul, then sums, maxes and exps of it in turn
// (about 1.7 values a line once lowered).
std::string long_program(int lines) {
  std::string text = "program long_chain(X: f32[n, d], W: f32[d, d]) {\n  t0 = matmul(X, W)\n";
  for (int i = 1; i < lines; ++i) {
    const std::string prev = "t" + std::to_string(i - 1);
    text += "  t" + std::to_string(i) + " = " +
            (i % 3 == 0   ? "exp(" + prev + ")"
             : i % 3 == 1 ? "sum(" + prev + ", axis=-1) + " + prev
                          : "max(" + prev + ", axis=-1) * " + prev) +
            "\n";
  }
  return text + "  return t" + std::to_string(lines - 1) + "\n}\n";
}

}  // namespace

TEST_CASE("a large program's search keeps its budget and honours a cancel", "[protocol][search][cancel][hostile]") {
  // Issue 46, 7: a 100,000-line program with budgetSeconds 2 ran 19.3 s and took 11.3 s to honour
  // $/cancelRequest: the checks prepared before the enumeration polled neither.
  InProcess server;
  auto peer = server.initialized();
  server.result(*peer, "program/open", {{"uri", "untitled:long"}, {"text", long_program(40000)}});
  json summary = server.result(*peer, "search/run", {{"program", "long_chain"}, {"limits", {{"budgetSeconds", 0.2}}}});
  CHECK(summary["stats"]["stopReason"] == "budget");
  CHECK_THAT(summary["stats"]["emptyReason"].get<std::string>(), Catch::Contains("ran out while it prepared the checks"));
  WARN("a 0.2 s search of 40,000 lines answered after " << summary["stats"]["totalSeconds"].get<double>() << " s");
  CHECK(summary["stats"]["totalSeconds"].get<double>() < 1.2);  // the budget, and a pass over the program between polls

  const json params = {{"program", "long_chain"}, {"limits", {{"budgetSeconds", 60}, {"maxOps", 12}}}, {"workDoneToken", "t"}};
  server.send(*peer, {{"jsonrpc", "2.0"}, {"id", "s"}, {"method", "search/run"}, {"params", params}});
  wait_for_begin(server, *peer);
  std::this_thread::sleep_for(100ms);
  const auto sent = std::chrono::steady_clock::now();
  server.send(*peer, {{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", "s"}}}});
  for (;;) {
    auto m = peer->next(20s);
    REQUIRE(m);
    if (!m->contains("id")) continue;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - sent).count();
    CHECK(error_code(*m) == -32800);
    WARN("a search of 40,000 lines cancelled " << ms << " ms after $/cancelRequest");
    CHECK(ms < 1500);
    break;
  }
}
