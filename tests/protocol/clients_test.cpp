// Rules between clients of one daemon (issue 14): a definition that replaces another client's
// program is announced to it; re-opening an unchanged document changes and cancels nothing; a
// typed block that does not compile is not kept; files are read again when they change on disk.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <thread>

#include "in_process.h"
#include "support/subprocess.h"

using namespace prism::test;
using namespace std::chrono_literals;

namespace {

json run_request(int64_t id, const json& bindings) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", "program/run"}, {"params", {{"program", "rms_linear"}, {"bindings", bindings}}}};
}

// The next notification `method` a peer receives, skipping others.
std::optional<json> next_notification(Peer& peer, const std::string& method, std::chrono::milliseconds timeout = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto m = peer.next(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
    if (m && m->value("method", "") == method) return m;
  }
  return std::nullopt;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

}  // namespace

TEST_CASE("re-opening an unchanged document changes nothing and cancels another client's run", "[protocol][clients]") {
  InProcess server;
  auto a = server.initialized();
  auto b = server.initialized();
  server.result(*a, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}, {"version", 1}});
  server.send(*a, run_request(5, {{"n", 2048}, {"d", 2048}}));
  std::this_thread::sleep_for(100ms);
  json again = server.result(*b, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}, {"replace", true}});
  CHECK(again["unchanged"] == true);
  CHECK(again["version"] == 1);
  for (;;) {
    auto r = a->next(60s);
    REQUIRE(r);
    if (r->contains("method")) continue;
    CHECK((*r)["id"] == 5);
    CHECK(r->contains("result"));  // not ContentModified
    break;
  }
}

TEST_CASE("a definition that replaces another client's program is announced to that client", "[protocol][clients]") {
  InProcess server;
  auto a = server.initialized();
  auto b = server.initialized();
  server.result(*a, "program/open", {{"uri", "untitled:first"}, {"text", kRmsLinear}});
  // Another document defining the same program replaces it.
  server.result(*b, "program/open", {{"uri", "untitled:second"}, {"text", kRmsLinear + "\n"}, {"replace", true}});
  auto replaced = next_notification(*a, "program/replaced");
  REQUIRE(replaced);
  CHECK((*replaced)["params"]["uri"] == "untitled:first");
  CHECK((*replaced)["params"]["replacedBy"] == "untitled:second");
  CHECK((*replaced)["params"]["programs"] == json::array({"rms_linear"}));
  CHECK_FALSE(next_notification(*b, "program/replaced", 200ms));  // not to the one who did it

  // The same document given another text by another client (a program typed at two prompts).
  server.result(*a, "program/open", {{"uri", "untitled:second"}, {"text", kRmsLinear + "\n\n"}, {"replace", true}});
  auto retyped = next_notification(*b, "program/replaced");
  REQUIRE(retyped);
  CHECK((*retyped)["params"]["uri"] == "untitled:second");
  CHECK((*retyped)["params"]["replacedBy"] == "untitled:second");
}

TEST_CASE("a typed definition that does not compile is not kept", "[protocol][clients]") {
  InProcess server;
  auto a = server.initialized();
  // Nothing was there: nothing is kept.
  json rejected = server.result(*a, "program/open", {{"uri", "repl:/broken"}, {"text", kBroken}, {"rejectOnError", true}});
  CHECK(rejected["rejected"] == true);
  CHECK_FALSE(rejected["diagnostics"].empty());
  CHECK(server.workspace.documents().empty());
  // A good definition stays when a broken one of the same name follows.
  server.result(*a, "program/open", {{"uri", "repl:/rms_linear"}, {"text", kRmsLinear}, {"version", 1}, {"rejectOnError", true}});
  const std::string broken = "program rms_linear(X: f16[n, d], W: f16[d, d]) {\n  return nope(X)\n}\n";
  json kept = server.result(*a, "program/open", {{"uri", "repl:/rms_linear"}, {"text", broken}, {"version", 2}, {"rejectOnError", true}});
  CHECK(kept["rejected"] == true);
  CHECK(server.workspace.text("repl:/rms_linear") == kRmsLinear);
  CHECK(server.workspace.document("repl:/rms_linear")->version == 1);
  // Without the flag (an editor's buffer), a document with errors is kept, as always.
  json editor = server.result(*a, "program/open", {{"uri", "untitled:b"}, {"text", kBroken}});
  CHECK_FALSE(editor.contains("rejected"));
  CHECK(server.workspace.text("untitled:b") == kBroken);
}

TEST_CASE("a file opened from disk is read again when it changes there, and its clients hear of it", "[protocol][clients]") {
  InProcess server;
  TempDir dir;
  const std::string path = dir / "r.prism";
  write_file(path, kRmsLinear);
  auto a = server.initialized();
  auto b = server.initialized();
  json opened = server.result(*a, "program/open", {{"uri", path}});
  const std::string uri = opened["uri"];
  // Unchanged on disk: nothing happens.
  server.result(*b, "program/list");
  CHECK_FALSE(next_notification(*a, "program/reloaded", 100ms));
  // Edited on disk (another size, so that the change shows whatever the clock's resolution).
  write_file(path, "# renamed\nprogram rms_linear2(X: f16[n, d], W: f16[d, d]) {\n  return matmul(rms_norm(X), W)\n}\n");
  json list = server.result(*b, "program/list");
  REQUIRE(list["programs"].size() == 1);
  CHECK(list["programs"][0]["name"] == "rms_linear2");
  auto reloaded = next_notification(*a, "program/reloaded");
  REQUIRE(reloaded);
  CHECK((*reloaded)["params"]["uri"] == uri);
  CHECK((*reloaded)["params"]["programs"] == json::array({"rms_linear2"}));
  CHECK(server.workspace.document(uri)->version == 1);
  // Every question about programs reads the disk first (its bind line says Reads::Disk), not
  // program/list alone; daemon/status does not.
  write_file(path, "program rms_linear3(X: f16[n, d], W: f16[d, d]) {\n  return matmul(rms_norm(X), W)\n}\n");
  server.result(*b, "daemon/status");
  CHECK(server.workspace.document(uri)->version == 1);
  CHECK(server.result(*b, "program/show", {{"program", "rms_linear3"}})["name"] == "rms_linear3");
  CHECK(server.workspace.document(uri)->version == 2);

  // An editor's buffer is the editor's: a file it sent the text of is never read behind its back.
  const std::string other = dir / "e.prism";
  write_file(other, kRmsLinear);
  server.result(*a, "program/open", {{"uri", other}, {"text", kBroken}});
  write_file(other, kRmsLinear + "\n# changed\n");
  server.result(*b, "program/list");
  CHECK(server.workspace.text("file://" + other) == kBroken);
}
