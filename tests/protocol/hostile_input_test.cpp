// Messages built to end the daemon (issue 17, D1 and D2): each is answered with an error for that
// message alone, and the session, the daemon and its other clients carry on.
#include <catch2/catch.hpp>

#include <string>

#include "in_process.h"
#include "prismd_process.h"
#include "protocol/framing.h"
#include "repl/client.h"

using namespace prism::test;
using namespace std::chrono_literals;
using prism::repl::Client;

namespace {

constexpr auto kTimeout = std::chrono::milliseconds(20000);

std::string nested(char open, char close, size_t depth, const std::string& inner = "1") {
  std::string text;
  for (size_t i = 0; i < depth; ++i) text += open == '{' ? "{\"a\":" : std::string(1, open);
  text += inner;
  text.append(depth, close);
  return text;
}

// Bodies that used to unwind the event loop (D1) or overflow the stack (D2).
std::vector<std::string> hostile_bodies() {
  return {
      R"({"jsonrpc":"2.0","id":1,"method":"daemon/status","params":{"x":1e400}})",
      R"({"jsonrpc":"2.0","id":1,"method":"daemon/status","params":{"x":-1e400}})",
      R"({"jsonrpc":"2.0","id":1e309,"method":"daemon/status"})",
      R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1e999}})",
      R"({"jsonrpc":"2.0","id":2,"method":"daemon/status","params":{"x":)" + nested('{', '}', 60000) + "}}",
      R"({"jsonrpc":"2.0","id":3,"method":"daemon/status","params":)" + nested('[', ']', 140000) + "}",
      // Unbalanced and deep: still refused without recursing.
      std::string(300000, '['),
  };
}

}  // namespace

TEST_CASE("numbers beyond double range and deep nesting are ParseError for that message alone", "[protocol][jsonrpc][hostile]") {
  InProcess server;
  SECTION("before initialize") {
    auto peer = server.connect();
    for (const std::string& body : hostile_bodies()) {
      server.send_raw(*peer, body);
      auto r = peer->next(5s);
      REQUIRE(r);
      CHECK(error_code(*r) == -32700);
      CHECK((*r)["id"].is_null());
    }
    CHECK(server.call(*peer, "initialize", {{"capabilities", json::object()}}).contains("result"));
  }
  SECTION("after initialize, the message says what was wrong") {
    auto peer = server.initialized();
    server.send_raw(*peer, hostile_bodies()[0]);
    auto r = peer->next(5s);
    REQUIRE(r);
    CHECK_THAT((*r)["error"]["message"].get<std::string>(), Catch::Contains("1e400"));
    server.send_raw(*peer, hostile_bodies()[5]);
    r = peer->next(5s);
    REQUIRE(r);
    CHECK_THAT((*r)["error"]["message"].get<std::string>(),
               Catch::Contains("nested deeper than " + std::to_string(prism::protocol::kMaxJsonDepth)));
    CHECK(server.call(*peer, "program/list").contains("result"));
  }
  SECTION("nesting up to the limit is parsed; brackets inside strings do not count") {
    auto peer = server.initialized();
    int depth = prism::protocol::kMaxJsonDepth - 2;  // the envelope and params are two levels
    json r = server.call(*peer, "daemon/status", json::parse(std::string("{\"x\":") + nested('[', ']', depth - 1) + "}"));
    CHECK(r.contains("result"));
    std::string brackets(100000, '[');
    r = server.call(*peer, "daemon/status", {{"x", brackets}});
    CHECK(r.contains("result"));
  }
}

TEST_CASE("prismd survives hostile frames from one client while another works", "[protocol][daemon][hostile]") {
  TempDir dir;
  Prismd daemon({"--socket", dir.socket()});
  REQUIRE(daemon.wait_ready());
  auto good = Client::connect_unix(dir.socket());
  good->request("initialize", {{"capabilities", json::object()}}, kTimeout);
  auto bad = Client::connect_unix(dir.socket());
  for (const std::string& body : hostile_bodies()) bad->send_raw(prism::protocol::encode_frame(body));
  for (size_t i = 0; i < hostile_bodies().size(); ++i) {
    auto m = bad->read_message(kTimeout);
    REQUIRE(m);
    CHECK((*m)["error"]["code"] == -32700);
  }
  CHECK(good->request("daemon/status", json::object(), kTimeout)["clients"] == 2);
  CHECK_FALSE(daemon.wait_exit(0ms));
}

TEST_CASE("a huge method name is clipped in the answer and the log", "[protocol][jsonrpc][hostile]") {
  // Fuzz finding F1 (fuzz/findings/README.md): client text was echoed whole into every log line.
  std::vector<std::string> lines;
  prism::Workspace workspace;
  prism::protocol::Server::Options options;
  options.log = [&](const std::string& line) { lines.push_back(line); };
  prism::protocol::Server server(workspace, options);
  std::vector<std::string> sent;
  prism::protocol::Session::Callbacks callbacks;
  callbacks.send = [&](std::string body) { sent.push_back(std::move(body)); };
  auto session = server.connect(callbacks);
  server.receive(session, json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", json::object()}}.dump());
  server.receive(session, json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", std::string(16384, 'a')}}.dump());
  REQUIRE(sent.size() == 2);
  json reply = json::parse(sent[1]);
  CHECK(reply["error"]["code"] == -32601);
  CHECK(reply["error"]["message"].get<std::string>().size() < 300);
  REQUIRE_FALSE(lines.empty());
  for (const auto& line : lines) CHECK(line.size() < 2200);
}
