// JSON-RPC conformance of the protocol Server, in process: lifecycle, every error code, documents,
// diagnostics, queries, cancellation and ContentModified.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "in_process.h"

using namespace prism::test;
using namespace std::chrono_literals;

namespace {

json request(int64_t id, const std::string& method, const json& params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}
json notification(const std::string& method, const json& params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", params}};
}
std::string field_of(const json& response) { return response.at("error").at("data").at("field").get<std::string>(); }

json range_change(const std::string& uri, int64_t version, int l0, int c0, int l1, int c1, const std::string& text) {
  json range = {{"start", {{"line", l0}, {"character", c0}}}, {"end", {{"line", l1}, {"character", c1}}}};
  return {{"uri", uri}, {"version", version}, {"changes", json::array({json{{"range", range}, {"text", text}}})}};
}

const json kBigBindings = {{"n", 4096}, {"d", 4096}};

}  // namespace

TEST_CASE("lifecycle: initialize, shutdown, exit", "[protocol][lifecycle]") {
  InProcess server;
  auto peer = server.connect();

  SECTION("requests before initialize fail with ServerNotInitialized; notifications are dropped") {
    json r = server.call(*peer, "program/list");
    CHECK(error_code(r) == -32002);
    CHECK(error_code(server.call(*peer, "shutdown")) == -32002);
    server.send(*peer, notification("program/open", {{"uri", "untitled:x"}, {"text", kRmsLinear}}));
    CHECK_FALSE(peer->next(100ms));
    CHECK(server.workspace.documents().empty());
  }
  SECTION("initialize answers capabilities and serverInfo; a second one is InvalidRequest") {
    json r = server.result(*peer, "initialize", {{"processId", ::getpid()}, {"clientInfo", {{"name", "test"}}}});
    CHECK(r["serverInfo"]["name"] == "prismd");
    CHECK(r["serverInfo"]["version"].is_string());
    CHECK(r["capabilities"]["positionEncoding"] == "utf-16");
    CHECK(error_code(server.call(*peer, "initialize")) == -32600);
  }
  SECTION("utf-8 is chosen when the client offers it") {
    json r = server.result(*peer, "initialize",
                           {{"capabilities", {{"general", {{"positionEncodings", {"utf-16", "utf-8"}}}}}}});
    CHECK(r["capabilities"]["positionEncoding"] == "utf-8");
  }
  SECTION("after shutdown every request but exit is InvalidRequest; exit then closes with 0") {
    server.result(*peer, "initialize");
    CHECK(server.result(*peer, "shutdown").is_null());
    CHECK(error_code(server.call(*peer, "program/list")) == -32600);
    CHECK(peer->exit_code == -2);
    server.send(*peer, notification("exit"));
    CHECK(peer->exit_code == 0);
  }
  SECTION("exit without shutdown asks for exit code 1, even before initialize") {
    server.send(*peer, notification("exit"));
    CHECK(peer->exit_code == 1);
    CHECK(peer->pending() == 0);
  }
}

TEST_CASE("envelope errors", "[protocol][jsonrpc]") {
  InProcess server;
  auto peer = server.initialized();
  auto answer = [&](const std::string& body) {
    server.send_raw(*peer, body);
    auto r = peer->next(1s);
    REQUIRE(r);
    return *r;
  };

  SECTION("invalid JSON is ParseError with id null") {
    json r = answer("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
    CHECK(error_code(r) == -32700);
    CHECK(r["id"].is_null());
  }
  SECTION("batches are InvalidRequest") {
    json r = answer(R"([{"jsonrpc":"2.0","id":1,"method":"program/list"}])");
    CHECK(error_code(r) == -32600);
    CHECK_THAT(r["error"]["message"].get<std::string>(), Catch::Contains("batch"));
  }
  SECTION("non-objects are InvalidRequest") {
    CHECK(error_code(answer("42")) == -32600);
    CHECK(error_code(answer("\"x\"")) == -32600);
  }
  SECTION("a wrong or missing jsonrpc member is InvalidRequest, answered with the id") {
    json r = answer(R"({"jsonrpc":"1.0","id":7,"method":"program/list"})");
    CHECK(error_code(r) == -32600);
    CHECK(r["id"] == 7);
    CHECK(error_code(answer(R"({"id":"s","method":"program/list"})")) == -32600);
  }
  SECTION("a bad id type, a non-string method, or scalar params are InvalidRequest") {
    json r = answer(R"({"jsonrpc":"2.0","id":true,"method":"program/list"})");
    CHECK(error_code(r) == -32600);
    CHECK(r["id"].is_null());
    CHECK(error_code(answer(R"({"jsonrpc":"2.0","id":1,"method":5})")) == -32600);
    CHECK(error_code(answer(R"({"jsonrpc":"2.0","id":1})")) == -32600);
    CHECK(error_code(answer(R"({"jsonrpc":"2.0","id":1,"method":"program/list","params":3})")) == -32600);
  }
  SECTION("string and null ids are echoed") {
    json r = answer(R"({"jsonrpc":"2.0","id":"abc","method":"program/list"})");
    CHECK(r["id"] == "abc");
    CHECK(r.contains("result"));
    r = answer(R"({"jsonrpc":"2.0","id":null,"method":"program/list"})");
    CHECK(r["id"].is_null());
    CHECK(r.contains("result"));
  }
  SECTION("responses from the client are ignored") {
    server.send_raw(*peer, R"({"jsonrpc":"2.0","id":3,"result":null})");
    CHECK_FALSE(peer->next(100ms));
  }
  SECTION("the session stays usable after each error") {
    answer("not json");
    CHECK(server.call(*peer, "program/list").contains("result"));
  }
}

TEST_CASE("unknown methods", "[protocol][jsonrpc]") {
  InProcess server;
  auto peer = server.initialized();
  json r = server.call(*peer, "program/frobnicate");
  CHECK(error_code(r) == -32601);
  CHECK_THAT(r["error"]["message"].get<std::string>(), Catch::Contains("program/frobnicate"));
  CHECK(error_code(server.call(*peer, "$/unknownRequest")) == -32601);
  // Unknown notifications, "$/" ones included, are ignored.
  server.send(*peer, notification("program/frobnicate"));
  server.send(*peer, notification("$/setTrace", {{"value", "off"}}));
  CHECK_FALSE(peer->next(100ms));
}

TEST_CASE("InvalidParams names the field", "[protocol][params]") {
  InProcess server;
  auto peer = server.initialized();
  server.result(*peer, "program/open", {{"uri", "untitled:a"}, {"text", kRmsLinear}});

  auto check = [&](const std::string& method, const json& params, const std::string& field) {
    json r = server.call(*peer, method, params);
    INFO(method << " " << params.dump() << " -> " << r.dump());
    CHECK(error_code(r) == -32602);
    CHECK(field_of(r) == field);
  };
  check("program/open", json::object(), "uri");
  check("program/open", {{"uri", 5}}, "uri");
  check("program/open", {{"uri", "untitled:b"}, {"text", kRmsLinear}, {"version", "one"}}, "version");
  check("program/change", {{"uri", "untitled:a"}, {"changes", json::array()}}, "version");
  check("program/change", {{"uri", "untitled:a"}, {"version", 2}}, "changes");
  check("program/change", {{"uri", "untitled:a"}, {"version", 2}, {"changes", {{{"text", 3}}}}}, "changes[0].text");
  check("program/show", {{"program", 3}}, "program");
  check("program/run", {{"bindings", {{"n", 8}}}}, "program");
  check("program/run", {{"program", "rms_linear"}, {"bindings", {{"n", "eight"}}}}, "bindings.n");
  check("program/run", {{"program", "rms_linear"}, {"bindings", {{"n", 8}, {"d", 0}}}}, "bindings.d");
  check("program/run", {{"program", "rms_linear"}, {"bindings", {{"n", 8.5}}}}, "bindings.n");
  check("program/run", {{"program", "rms_linear"}, {"bindings", 8}}, "bindings");
  check("program/run", {{"program", "rms_linear"}, {"seed", -1}}, "seed");
  check("program/run", {{"program", "rms_linear"}, {"inputs", {{"X", 1}}}}, "inputs.X");
  check("program/run", {{"program", "rms_linear"}, {"output", "untitled:o"}}, "output");
  check("program/list", json::array({1}), "params");

  auto fresh = server.connect();
  json r = server.call(*fresh, "initialize", {{"capabilities", {{"general", {{"positionEncodings", "utf-8"}}}}}});
  CHECK(error_code(r) == -32602);
  CHECK(field_of(r) == "capabilities.general.positionEncodings");
}

TEST_CASE("an unexpected exception is InternalError and the session carries on", "[protocol][jsonrpc]") {
  InProcess server;
  server.server->add_method("test/throw", [](prism::protocol::Session&, const json&) -> json {
    throw std::logic_error("boom");
  });
  auto peer = server.initialized();
  json r = server.call(*peer, "test/throw");
  CHECK(error_code(r) == -32603);
  CHECK_THAT(r["error"]["message"].get<std::string>(), Catch::Contains("boom"));
  CHECK(server.call(*peer, "program/list").contains("result"));
}

TEST_CASE("RequestFailed for well-formed requests the engine cannot carry out", "[protocol][errors]") {
  InProcess server;
  auto peer = server.initialized();
  server.result(*peer, "program/open", {{"uri", "untitled:a"}, {"text", kRmsLinear}, {"version", 1}});

  auto fails = [&](const std::string& method, const json& params, const std::string& says) {
    json r = server.call(*peer, method, params);
    INFO(r.dump());
    CHECK(error_code(r) == -32803);
    CHECK_THAT(r["error"]["message"].get<std::string>(), Catch::Contains(says));
  };
  fails("program/show", {{"program", "nope"}}, "nope");
  fails("program/run", {{"program", "nope"}, {"bindings", {{"n", 2}}}}, "nope");
  fails("program/run", {{"program", "rms_linear"}, {"bindings", {{"n", 2}}}}, "d");
  fails("program/open", {{"uri", "/nonexistent/dir/x.prism"}}, "/nonexistent/dir/x.prism");
  fails("program/open", {{"uri", "untitled:zzz"}}, "untitled:zzz");
  fails("program/change", {{"uri", "untitled:zzz"}, {"version", 2}, {"changes", json::array()}}, "not open");
  fails("program/change", {{"uri", "untitled:a"}, {"version", 1}, {"changes", json::array()}}, "not greater");
  fails("program/close", {{"uri", "untitled:zzz"}}, "not open");
}

TEST_CASE("documents: open, change, close and pushed diagnostics", "[protocol][documents]") {
  InProcess server;
  auto a = server.initialized();

  SECTION("open pushes diagnostics before answering with the DocumentState") {
    server.send(*a, request(1, "program/open", {{"uri", "untitled:b"}, {"text", kBroken}, {"version", 3}}));
    auto first = a->next();
    REQUIRE(first);
    CHECK((*first)["method"] == "program/diagnostics");
    CHECK((*first)["params"]["uri"] == "untitled:b");
    CHECK((*first)["params"]["version"] == 3);
    auto& diags = (*first)["params"]["diagnostics"];
    REQUIRE(diags.size() >= 1);
    CHECK(diags[0]["severity"] == 1);
    CHECK(diags[0]["source"] == "prism");
    CHECK(diags[0]["range"]["start"]["line"] == 1);
    CHECK_THAT(diags[0]["message"].get<std::string>(), Catch::Contains("bad"));
    auto reply = a->next();
    REQUIRE(reply);
    CHECK((*reply)["id"] == 1);
    CHECK((*reply)["result"]["uri"] == "untitled:b");
    CHECK((*reply)["result"]["version"] == 3);
    CHECK((*reply)["result"]["diagnostics"] == diags);
  }
  SECTION("a clean document has no diagnostics and lists its programs") {
    json state = server.result(*a, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}});
    CHECK(state["programs"] == json{"rms_linear"});
    CHECK(state["diagnostics"].empty());
    REQUIRE(server.seen.size() == 1);
    CHECK(server.seen[0]["params"]["diagnostics"].empty());
  }
  SECTION("change applies range edits; diagnostics go to every client that opened or changed the uri") {
    auto b = server.initialized();
    auto c = server.initialized();
    server.result(*a, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}, {"version", 1}});
    // Line 1 is "  Y = rms_norm(X)": break it.
    json state = server.result(*b, "program/change", range_change("untitled:r", 2, 1, 6, 1, 14, "bad_op"));
    CHECK(state["version"] == 2);
    CHECK_FALSE(state["diagnostics"].empty());
    CHECK(*server.workspace.text("untitled:r") ==
          "program rms_linear(X: f16[n, d], W: f16[d, d]) {\n  Y = bad_op(X)\n  return matmul(Y, W)\n}\n");
    auto pushed_to_a = a->next(1s);
    REQUIRE(pushed_to_a);
    CHECK((*pushed_to_a)["method"] == "program/diagnostics");
    CHECK((*pushed_to_a)["params"]["version"] == 2);
    CHECK_FALSE(c->next(100ms));
    // A whole-text change without a range clears them again.
    state = server.result(*a, "program/change",
                          {{"uri", "untitled:r"}, {"version", 5}, {"changes", {{{"text", kRmsLinear}}}}});
    CHECK(state["diagnostics"].empty());
    auto pushed_to_b = b->next(1s);
    REQUIRE(pushed_to_b);
    CHECK((*pushed_to_b)["params"]["version"] == 5);
  }
  SECTION("UTF-16 and UTF-8 clients address the same text differently") {
    auto utf8 = server.initialized({{"general", {{"positionEncodings", {"utf-8"}}}}});
    server.result(*a, "program/open", {{"uri", "untitled:u"}, {"text", "\xF0\x9F\x98\x80" "ab\n"}});
    server.result(*a, "program/change", range_change("untitled:u", 1, 0, 2, 0, 3, "A"));
    CHECK(*server.workspace.text("untitled:u") == "\xF0\x9F\x98\x80" "Ab\n");
    server.result(*utf8, "program/change", range_change("untitled:u", 2, 0, 5, 0, 6, "B"));
    CHECK(*server.workspace.text("untitled:u") == "\xF0\x9F\x98\x80" "AB\n");
    // Inside the emoji, or past the text: rejected, and the text is unchanged.
    json r = server.call(*utf8, "program/change", range_change("untitled:u", 3, 0, 2, 0, 2, "!"));
    CHECK(error_code(r) == -32602);
    CHECK(field_of(r) == "changes[0].range.start");
    r = server.call(*a, "program/change", range_change("untitled:u", 3, 0, 1, 0, 2, "!"));
    CHECK(error_code(r) == -32602);
    r = server.call(*a, "program/change", range_change("untitled:u", 3, 4, 0, 4, 0, "!"));
    CHECK(error_code(r) == -32602);
    CHECK(*server.workspace.text("untitled:u") == "\xF0\x9F\x98\x80" "AB\n");
  }
  SECTION("open without text reads the file; a path and its file:// URI name one document") {
    auto path = std::filesystem::temp_directory_path() / ("prism-open-" + std::to_string(::getpid()) + " x.prism");
    std::ofstream(path) << kRmsLinear;
    json state = server.result(*a, "program/open", {{"uri", path.string()}});
    std::string uri = state["uri"];
    CHECK(uri.rfind("file:///", 0) == 0);
    CHECK_THAT(uri, Catch::Contains("%20x.prism"));
    CHECK(state["programs"] == json{"rms_linear"});
    json again = server.result(*a, "program/open", {{"uri", uri}});
    CHECK(again["uri"] == uri);
    CHECK(server.workspace.documents().size() == 1);
    CHECK(server.result(*a, "program/close", {{"uri", path.string()}}).is_null());
    CHECK(server.workspace.documents().empty());
    std::filesystem::remove(path);
  }
  SECTION("request methods sent as notifications run without an answer") {
    server.send(*a, notification("program/open", {{"uri", "untitled:n"}, {"text", kRmsLinear}}));
    auto pushed = a->next(1s);
    REQUIRE(pushed);
    CHECK((*pushed)["method"] == "program/diagnostics");
    CHECK_FALSE(a->next(100ms));
    CHECK(server.workspace.documents().size() == 1);
  }
}

TEST_CASE("queries: list, show, run", "[protocol][programs]") {
  InProcess server;
  auto peer = server.initialized();
  server.result(*peer, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}});

  json list = server.result(*peer, "program/list");
  REQUIRE(list["programs"].size() == 1);
  json p = list["programs"][0];
  CHECK(p["name"] == "rms_linear");
  CHECK(p["uri"] == "untitled:r");
  CHECK(p["dims"] == json{"n", "d"});
  REQUIRE(p["inputs"].size() == 2);
  CHECK(p["inputs"][0] == json{{"name", "X"}, {"dtype", "f16"}, {"shape", {"n", "d"}}});
  CHECK(p["outputs"].size() == 1);

  json show = server.result(*peer, "program/show", {{"program", "rms_linear"}});
  CHECK(show["name"] == "rms_linear");
  CHECK_THAT(show["signature"].get<std::string>(), Catch::StartsWith("program rms_linear("));
  CHECK(show["lowered"].is_string());
  CHECK(show["values"].is_array());
  CHECK(show.contains("inputs"));
  CHECK(show.contains("outputs"));

  json run = server.result(*peer, "program/run",
                           {{"program", "rms_linear"}, {"bindings", {{"n", 4}, {"d", 8}}}, {"seed", 1}, {"head", 2}});
  CHECK(run["program"] == "rms_linear");
  CHECK(run["bindings"] == json{{"d", 8}, {"n", 4}});
  CHECK(run["elapsedMs"].is_number());
  REQUIRE(run["outputs"].size() == 1);
  CHECK(run["outputs"][0]["shape"] == json{4, 8});
  CHECK(run["outputs"][0]["head"].size() == 2);
  CHECK(run["outputs"][0]["checksum"]["sum"].is_number());
  CHECK(run["outputs"][0]["checksum"]["absSum"].is_number());
}

TEST_CASE("daemon/status and daemon/stop", "[protocol][daemon]") {
  InProcess server;
  auto peer = server.initialized();
  json status = server.result(*peer, "daemon/status");
  CHECK(status["pid"] == ::getpid());
  CHECK(status["clients"] == 1);
  CHECK(status["documents"] == 0);
  CHECK(status["uptimeSeconds"].is_number());
  CHECK(status["version"].is_string());
  CHECK(status.contains("socket"));
  CHECK_FALSE(server.stopped);
  CHECK(server.result(*peer, "daemon/stop").is_null());
  CHECK(server.stopped);
}

TEST_CASE("$/cancelRequest answers RequestCancelled", "[protocol][cancel]") {
  InProcess server;
  auto peer = server.initialized();
  server.result(*peer, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}});
  server.send(*peer, request(77, "program/run", {{"program", "rms_linear"}, {"bindings", kBigBindings}}));
  // The connection is not blocked by the run.
  CHECK(server.call(*peer, "program/list").contains("result"));
  std::this_thread::sleep_for(100ms);
  auto start = std::chrono::steady_clock::now();
  server.send(*peer, notification("$/cancelRequest", {{"id", 77}}));
  auto r = peer->next(10s);
  REQUIRE(r);
  CHECK((*r)["id"] == 77);
  CHECK(error_code(*r) == -32800);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  // Cancelling what is no longer running is harmless.
  server.send(*peer, notification("$/cancelRequest", {{"id", 77}}));
  server.send(*peer, notification("$/cancelRequest", {{"id", "nope"}}));
  CHECK_FALSE(peer->next(100ms));
}

TEST_CASE("an edit of the program while it runs answers ContentModified", "[protocol][cancel]") {
  InProcess server;
  auto peer = server.initialized();
  auto editor = server.initialized();
  server.result(*peer, "program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}, {"version", 1}});
  server.send(*peer, request(5, "program/run", {{"program", "rms_linear"}, {"bindings", kBigBindings}}));
  std::this_thread::sleep_for(100ms);
  server.result(*editor, "program/change",
                {{"uri", "untitled:r"}, {"version", 2}, {"changes", {{{"text", kRmsLinear + "\n"}}}}});
  for (;;) {
    auto r = peer->next(10s);
    REQUIRE(r);
    if (r->contains("method")) continue;  // the diagnostics of the edit
    CHECK((*r)["id"] == 5);
    CHECK(error_code(*r) == -32801);
    break;
  }
}
