// tune/run, tune/results, kernel/source and kernel/library: over the socket against a daemon with planted
// faulty kernels (a bad kernel costs one candidate and never the daemon), and their params.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <thread>

#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/compiler.h"
#include "in_process.h"
#include "clients.h"
#include "prismd_process.h"
#include "protocol/framing.h"
#include "repl/client.h"

using namespace prism::test;
using prism::repl::Client;
using namespace std::chrono_literals;

namespace {

constexpr auto kTimeout = std::chrono::milliseconds(120000);


}  // namespace

TEST_CASE("tune/run: a crashing and a hanging kernel fail their candidates while the daemon serves others", "[protocol][tune][isolation]") {
  TempDir dir;
  auto daemon = start_prismd_with({{"PRISM_FAULT_INJECT", "crash@1,hang@2"}, {"PRISM_KERNEL_TIMEOUT", "2"}, {"PRISM_CACHE_DIR", dir / "cache"}},
                           {"--socket", dir.socket()});
  REQUIRE(daemon->wait_ready());
  auto client = connect_initialized(dir.socket());
  auto other = connect_initialized(dir.socket());
  client->request("program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}}, kTimeout);
  client->send_raw(prism::protocol::encode_frame(
      json{{"jsonrpc", "2.0"}, {"id", "tune"}, {"method", "tune/run"},
           {"params", {{"program", "rms_linear"}, {"bindings", {{"n", 4}, {"d", 64}}}, {"top", 3}}}}
          .dump()));
  // While it tunes (the planted hang alone takes 2 s), the other client is answered.
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    CHECK(other->request("program/list", json::object(), 5000ms)["programs"].size() == 1);
    std::this_thread::sleep_for(200ms);
  }
  CHECK(std::chrono::steady_clock::now() - start < 5s);

  std::optional<json> reply;
  while (!reply) {
    auto m = client->read_message(kTimeout);
    REQUIRE(m);
    if (m->value("id", json()) == "tune") reply = *m;
  }
  INFO(reply->dump(2));
  REQUIRE(reply->contains("result"));
  const json& r = (*reply)["result"];
  std::vector<std::string> errors;
  for (const auto& row : r["rows"])
    if (!row["ok"].get<bool>()) errors.push_back(row["error"]);
  REQUIRE(errors.size() == 2);
  CHECK_THAT(errors[0] + " | " + errors[1], Catch::Contains("the kernel crashed (SIGSEGV"));
  CHECK_THAT(errors[0] + " | " + errors[1], Catch::Contains("did not finish within 2 s"));
  REQUIRE(r["best"].is_object());
  CHECK(r["best"]["ok"] == true);
  CHECK(r["baselineMs"].get<double>() > 0);
  CHECK(r["speedup"].get<double>() > 0);

  // The daemon still tunes, and remembers.
  json results = other->request("tune/results", {{"program", "rms_linear"}}, kTimeout);
  REQUIRE(results["results"].size() == 1);
  CHECK(results["results"][0]["best"] == r["best"]);
  json source = other->request("kernel/source", {{"program", "rms_linear"}}, kTimeout);
  CHECK(source["candidate"] == r["best"]["candidate"]);
  CHECK(source["tuned"] == true);
  CHECK_THAT(source["source"].get<std::string>(), Catch::Contains("prism_entry"));
  const std::string symbol = source["symbol"].get<std::string>();
  CHECK_THAT(symbol, Catch::StartsWith("prism_rms_linear_d"));
  CHECK_THAT(source["header"].get<std::string>(), Catch::Contains("int " + symbol + "(const void* const* inputs"));
  json exported = other->request("kernel/source", {{"program", "rms_linear"}, {"export", true}}, kTimeout);
  CHECK_THAT(exported["source"].get<std::string>(), Catch::Contains("#define prism_entry " + symbol + "\n"));
  // The same kernel compiled: a shared object with the C ABI of engine/backend/cpu/abi.h.
  json library = other->request("kernel/library", {{"program", "rms_linear"}}, kTimeout);
  CHECK(library["candidate"] == r["best"]["candidate"]);
  CHECK(library["symbol"] == symbol);
  prism::backend::cpu::LoadedLibrary loaded(library["library"].get<std::string>());
  CHECK(loaded.symbol(prism::backend::cpu::kEntrySymbol) != nullptr);
  json status = other->request("daemon/status", json::object(), kTimeout);
  REQUIRE(status["targets"].size() == 2);
  CHECK(status["targets"][0]["name"] == "cpu");
  CHECK(status["targets"][0]["available"] == true);
  CHECK(status["targets"][1]["name"] == "cuda");
  CHECK(status["targets"][1]["available"] == false);
}

TEST_CASE("tune/run and kernel/source validate their params", "[protocol][tune]") {
  InProcess server;
  auto peer = server.initialized();
  server.result(*peer, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}});
  CHECK(error_code(server.call(*peer, "tune/run", {{"program", "rms_linear"}})) == -32602);
  CHECK(error_code(server.call(*peer, "tune/run", {{"program", "rms_linear"}, {"bindings", {{"n", 0}}}})) == -32602);
  CHECK(error_code(server.call(*peer, "tune/run", {{"program", "rms_linear"}, {"bindings", {{"n", 4}, {"d", 64}}}, {"top", 0}})) == -32602);
  json cuda = server.call(*peer, "tune/run", {{"program", "rms_linear"}, {"bindings", {{"n", 4}, {"d", 64}}}, {"target", "cuda"}});
  CHECK(error_code(cuda) == -32803);
  CHECK_THAT(cuda["error"]["message"].get<std::string>(), Catch::Contains("target 'cuda' is not available"));
  json missing = server.call(*peer, "tune/run", {{"program", "rms_linear"}, {"bindings", {{"n", 4}}}});
  CHECK(error_code(missing) == -32803);
  CHECK_THAT(missing["error"]["message"].get<std::string>(), Catch::Contains("missing binding for dim 'd'"));
  json unknown = server.call(*peer, "tune/run", {{"program", "nope"}, {"bindings", {{"n", 4}}}});
  CHECK(error_code(unknown) == -32803);
  json untuned = server.call(*peer, "kernel/source", {{"program", "rms_linear"}});
  CHECK(error_code(untuned) == -32803);
  CHECK_THAT(untuned["error"]["message"].get<std::string>(), Catch::Contains("has not been tuned yet"));
  CHECK(server.result(*peer, "tune/results", {{"program", "rms_linear"}})["results"].empty());
  json tpu = server.call(*peer, "kernel/source", {{"program", "rms_linear"}, {"bindings", {{"n", 8}, {"d", 64}}}, {"target", "tpu"}});
  CHECK(error_code(tpu) == -32602);
  CHECK_THAT(tpu["error"]["message"].get<std::string>(), Catch::Contains("unknown target 'tpu' (targets: cpu, cuda"));
  CHECK(error_code(server.call(*peer, "tune/run", {{"program", "rms_linear"}, {"bindings", {{"n", 4}, {"d", 64}}}, {"target", "gpu"}})) == -32602);
}

TEST_CASE("kernel/source with target cuda gives the CUDA source without a GPU", "[protocol][tune][cuda]") {
  InProcess server;
  auto peer = server.initialized();
  server.result(*peer, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}});
  json k = server.result(*peer, "kernel/source", {{"program", "rms_linear"}, {"bindings", {{"n", 8}, {"d", 256}}}, {"target", "cuda"}});
  CHECK(k["target"] == "cuda");
  CHECK(k["candidate"].get<int>() >= 1);
  CHECK(k["tuned"] == false);
  CHECK_THAT(k["source"].get<std::string>(), Catch::Contains("extern \"C\" __global__"));
  CHECK_THAT(k["source"].get<std::string>(), Catch::Contains("prism_kernel_0<<<"));
  json again = server.result(*peer, "kernel/source", {{"program", "rms_linear"}, {"bindings", {{"n", 8}, {"d", 256}}}, {"target", "cuda"}, {"candidate", 3}});
  CHECK(again["candidate"] == 3);
}
