// prismd as a language server (issue 15): LSP's ServerCapabilities, the textDocument lifecycle
// with publishDiagnostics, hover, definition and documentSymbol, over the same documents as the
// REPL's program/* methods.
#include <catch2/catch.hpp>

#include <set>

#include "in_process.h"

using namespace prism::test;
using namespace std::chrono_literals;

namespace {

json note(const std::string& method, const json& params) { return {{"jsonrpc", "2.0"}, {"method", method}, {"params", params}}; }

// The next notification `method` the peer receives, skipping others.
std::optional<json> next_of(Peer& peer, const std::string& method) {
  for (;;) {
    auto m = peer.next(5s);
    if (!m) return std::nullopt;
    if (m->value("method", "") == method) return (*m)["params"];
  }
}

const std::string kUri = "file:///tmp/editor/rms.prism";
// Line 1 (0-based) "  Y = rms_norm(X)", line 2 "  return matmul(Y, W)".
const std::string kText = kRmsLinear;

json at(int line, int character) { return {{"textDocument", {{"uri", kUri}}}, {"position", {{"line", line}, {"character", character}}}}; }

}  // namespace

TEST_CASE("initialize advertises LSP's capabilities, prism's methods under experimental", "[protocol][lsp]") {
  InProcess server;
  auto peer = server.connect();
  json init = server.result(*peer, "initialize", {{"processId", nullptr}, {"capabilities", json::object()}});
  const json& caps = init["capabilities"];
  CHECK(caps["textDocumentSync"]["openClose"] == true);
  CHECK(caps["textDocumentSync"]["change"] == 2);
  CHECK(caps["hoverProvider"] == true);
  CHECK(caps["definitionProvider"] == true);
  CHECK(caps["documentSymbolProvider"] == true);
  CHECK(caps["referencesProvider"] == true);
  CHECK(caps["inlayHintProvider"] == true);
  CHECK(caps["completionProvider"].is_object());
  CHECK(caps["signatureHelpProvider"]["triggerCharacters"] == json::array({"(", ","}));
  CHECK(caps["codeLensProvider"].is_object());
  CHECK(caps["documentFormattingProvider"] == true);
  CHECK(caps["executeCommandProvider"]["commands"] == json::array({"prism.search", "prism.tune"}));
  const json& methods = caps["experimental"]["methods"];
  CHECK(std::find(methods.begin(), methods.end(), "program/open") != methods.end());
  CHECK(std::find(methods.begin(), methods.end(), "tune/run") != methods.end());
  // Lua's empty table arrives as []: accepted where a method takes no params.
  CHECK(server.call(*peer, "shutdown", json::array()).contains("result"));
}

TEST_CASE("didOpen, didChange and didClose keep the document; diagnostics come as publishDiagnostics", "[protocol][lsp]") {
  InProcess server;
  auto editor = server.initialized();
  auto repl = server.initialized();
  const std::string broken = "program rms_linear(X: f16[n, d], W: f16[d, d]) {\n  Y = rms_nrm(X)\n  return matmul(Y, W)\n}\n";
  server.send(*editor, note("textDocument/didOpen", {{"textDocument", {{"uri", kUri}, {"languageId", "prism"}, {"version", 1}, {"text", broken}}}}));
  auto diagnostics = next_of(*editor, "textDocument/publishDiagnostics");
  REQUIRE(diagnostics);
  CHECK((*diagnostics)["uri"] == kUri);
  CHECK((*diagnostics)["version"] == 1);
  REQUIRE((*diagnostics)["diagnostics"].size() == 1);
  CHECK((*diagnostics)["diagnostics"][0]["range"]["start"] == json({{"line", 1}, {"character", 6}}));

  // An incremental edit that fixes it: "rms_nrm" -> "rms_norm" (an "o" at line 1, character 11).
  server.send(*editor, note("textDocument/didChange",
                            {{"textDocument", {{"uri", kUri}, {"version", 2}}},
                             {"contentChanges", {{{"range", {{"start", {{"line", 1}, {"character", 11}}}, {"end", {{"line", 1}, {"character", 11}}}}},
                                                  {"text", "o"}}}}}));
  diagnostics = next_of(*editor, "textDocument/publishDiagnostics");
  REQUIRE(diagnostics);
  CHECK((*diagnostics)["version"] == 2);
  CHECK((*diagnostics)["diagnostics"].empty());
  // One document store: the REPL's methods see the editor's program.
  json list = server.result(*repl, "program/list");
  REQUIRE(list["programs"].size() == 1);
  CHECK(list["programs"][0]["uri"] == kUri);

  // A change to a document that is not open: the editor hears of it in a log message.
  server.send(*editor, note("textDocument/didChange", {{"textDocument", {{"uri", "file:///nope.prism"}, {"version", 2}}}, {"contentChanges", json::array()}}));
  auto log = next_of(*editor, "window/logMessage");
  REQUIRE(log);
  CHECK_THAT((*log)["message"].get<std::string>(), Catch::Contains("is not open"));

  server.send(*editor, note("textDocument/didClose", {{"textDocument", {{"uri", kUri}}}}));
  CHECK(server.result(*repl, "program/list")["programs"].empty());
}

TEST_CASE("hover shows a value's shape and op, a dim, an op; definition and document symbols", "[protocol][lsp]") {
  InProcess server;
  auto editor = server.initialized();
  server.send(*editor, note("textDocument/didOpen", {{"textDocument", {{"uri", kUri}, {"languageId", "prism"}, {"version", 1}, {"text", kText}}}}));
  REQUIRE(next_of(*editor, "textDocument/publishDiagnostics"));

  json value = server.result(*editor, "textDocument/hover", at(2, 17));  // the Y in matmul(Y, W)
  CHECK_THAT(value["contents"]["value"].get<std::string>(), Catch::Contains("Y: f16[n, d]") && Catch::Contains("computed by `rms_norm`"));
  CHECK(value["range"]["start"] == json({{"line", 2}, {"character", 16}}));
  json input = server.result(*editor, "textDocument/hover", at(2, 19));  // W
  CHECK_THAT(input["contents"]["value"].get<std::string>(), Catch::Contains("W: f16[d, d]") && Catch::Contains("input of `rms_linear`"));
  json dim = server.result(*editor, "textDocument/hover", at(0, 26));  // the n of X: f16[n, d]
  CHECK_THAT(dim["contents"]["value"].get<std::string>(), Catch::Contains("dim `n`"));
  json op = server.result(*editor, "textDocument/hover", at(2, 11));  // matmul
  CHECK_THAT(op["contents"]["value"].get<std::string>(), Catch::Contains("matmul(a, b)") && Catch::Contains("matrix product"));
  json program = server.result(*editor, "textDocument/hover", at(0, 10));
  CHECK_THAT(program["contents"]["value"].get<std::string>(), Catch::Contains("program rms_linear("));
  CHECK(server.result(*editor, "textDocument/hover", at(3, 0)).is_null());  // "}"

  json definition = server.result(*editor, "textDocument/definition", at(2, 17));
  CHECK(definition["uri"] == kUri);
  CHECK(definition["range"]["start"] == json({{"line", 1}, {"character", 2}}));
  CHECK(definition["range"]["end"] == json({{"line", 1}, {"character", 3}}));

  // A dim: where the inputs first name it (the d of W: f16[d, d] goes to X's).
  json dim_definition = server.result(*editor, "textDocument/definition", at(0, 40));
  CHECK(dim_definition["range"]["start"] == json({{"line", 0}, {"character", 29}}));
  CHECK(server.result(*editor, "textDocument/definition", at(2, 11)).is_null());  // an op

  json symbols = server.result(*editor, "textDocument/documentSymbol", {{"textDocument", {{"uri", kUri}}}});
  REQUIRE(symbols.size() == 1);
  CHECK(symbols[0]["name"] == "rms_linear");
  CHECK(symbols[0]["kind"] == 12);
  std::vector<std::string> children;
  for (const auto& c : symbols[0]["children"]) children.push_back(c["name"]);
  CHECK(children == std::vector<std::string>{"X", "W", "Y"});

  // An input's declared domain, in its hover and in the program's signature.
  const std::string uri2 = "file:///tmp/bn.prism";
  server.send(*editor, note("textDocument/didOpen", {{"textDocument", {{"uri", uri2}, {"languageId", "prism"}, {"version", 1},
                                                                       {"text", "program bn(X: f32[n, d], var: f32[d] >= 0) {\n  return X / sqrt(var + 1)\n}\n"}}}}));
  REQUIRE(next_of(*editor, "textDocument/publishDiagnostics"));
  auto at2 = [&](int line, int character) { return json{{"textDocument", {{"uri", uri2}}}, {"position", {{"line", line}, {"character", character}}}}; };
  CHECK_THAT(server.result(*editor, "textDocument/hover", at2(1, 19))["contents"]["value"].get<std::string>(),
             Catch::Contains("input of `bn`, declared `>= 0`"));
  CHECK_THAT(server.result(*editor, "textDocument/hover", at2(0, 8))["contents"]["value"].get<std::string>(),
             Catch::Contains("var: f32[d] >= 0"));

  // A position outside the document is InvalidParams; an unknown document RequestFailed.
  CHECK(error_code(server.call(*editor, "textDocument/hover", at(40, 0))) == -32602);
  CHECK(error_code(server.call(*editor, "textDocument/hover", {{"textDocument", {{"uri", "file:///x"}}}, {"position", {{"line", 0}, {"character", 0}}}})) ==
        -32803);
}

TEST_CASE("an editor that opens a document the REPL has open with the same text gets its diagnostics", "[protocol][lsp]") {
  InProcess server;
  auto repl = server.initialized();
  auto editor = server.initialized();
  server.result(*repl, "program/open", {{"uri", kUri}, {"text", kText}});
  server.send(*editor, note("textDocument/didOpen", {{"textDocument", {{"uri", kUri}, {"languageId", "prism"}, {"version", 0}, {"text", kText}}}}));
  auto diagnostics = next_of(*editor, "textDocument/publishDiagnostics");
  REQUIRE(diagnostics);
  CHECK((*diagnostics)["diagnostics"].empty());
}

TEST_CASE("references, inlay hints and completion", "[protocol][lsp]") {
  InProcess server;
  auto editor = server.initialized();
  // Two programs: words are looked up in the one that encloses the position.
  const std::string text = kText + "# the second\nprogram scaled(Y: f32[m]) {\n  Z = Y * 2\n  return Z + Y\n}\n";
  server.send(*editor, note("textDocument/didOpen", {{"textDocument", {{"uri", kUri}, {"languageId", "prism"}, {"version", 1}, {"text", text}}}}));
  REQUIRE(next_of(*editor, "textDocument/publishDiagnostics"));

  json refs = server.result(*editor, "textDocument/references", at(1, 2));  // the Y of rms_linear
  REQUIRE(refs.size() == 2);
  CHECK(refs[0]["range"]["start"] == json({{"line", 1}, {"character", 2}}));
  CHECK(refs[1]["range"]["start"] == json({{"line", 2}, {"character", 16}}));
  json without = at(1, 2);
  without["context"] = {{"includeDeclaration", false}};
  CHECK(server.result(*editor, "textDocument/references", without).size() == 1);
  json second = server.result(*editor, "textDocument/references", at(7, 13));  // the Y of scaled: 3 uses, none in rms_linear
  CHECK(second.size() == 3);
  json dims = server.result(*editor, "textDocument/references", at(0, 26));  // n
  CHECK(dims.size() == 1);

  const json whole = {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 9}, {"character", 0}}}};
  json hints = server.result(*editor, "textDocument/inlayHint", {{"textDocument", {{"uri", kUri}}}, {"range", whole}});
  REQUIRE(hints.size() == 2);
  CHECK(hints[0]["label"] == ": f16[n, d]");
  CHECK(hints[0]["position"] == json({{"line", 1}, {"character", 3}}));
  CHECK(hints[1]["label"] == ": f32[m]");

  json completion = server.result(*editor, "textDocument/completion", at(7, 6));
  std::set<std::string> labels;
  for (const auto& item : completion["items"]) labels.insert(item["label"].get<std::string>());
  for (const char* expected : {"matmul", "rms_norm", "softmax", "Y", "Z", "m", "return", "bf16"}) CHECK(labels.count(expected) == 1);
  CHECK(labels.count("W") == 0);  // rms_linear's, not in scope here
}

TEST_CASE("an edit prism does not take is told to the editor, and the document waits to be reopened", "[protocol][lsp][security]") {
  // Issue 61, 10: a didChange past the 16 MiB limit was dropped with a log line on the daemon's
  // side only, and the editor and the daemon then held different texts.
  InProcess server;
  auto editor = server.initialized();
  server.send(*editor, note("textDocument/didOpen", {{"textDocument", {{"uri", kUri}, {"languageId", "prism"}, {"version", 1}, {"text", kText}}}}));
  REQUIRE(next_of(*editor, "textDocument/publishDiagnostics"));

  const std::string huge(size_t(17) << 20, ' ');
  server.send(*editor, note("textDocument/didChange", {{"textDocument", {{"uri", kUri}, {"version", 2}}}, {"contentChanges", {{{"text", huge + kText}}}}}));
  // The diagnostic, then the message.
  auto diagnostics = next_of(*editor, "textDocument/publishDiagnostics");
  REQUIRE(diagnostics);
  REQUIRE_FALSE((*diagnostics)["diagnostics"].empty());
  CHECK_THAT((*diagnostics)["diagnostics"][0]["message"].get<std::string>(), Catch::Contains("until it is closed and opened again"));
  CHECK((*diagnostics)["diagnostics"][0]["range"]["start"] == json({{"line", 0}, {"character", 0}}));
  auto shown = next_of(*editor, "window/showMessage");
  REQUIRE(shown);
  CHECK((*shown)["type"] == 1);
  CHECK_THAT((*shown)["message"].get<std::string>(), Catch::Contains("did not take the last edit") && Catch::Contains("16 MiB"));

  // A later incremental change would apply to a text prism does not have: dropped, and nothing said again.
  server.seen.clear();
  server.send(*editor, note("textDocument/didChange",
                            {{"textDocument", {{"uri", kUri}, {"version", 3}}},
                             {"contentChanges", {{{"range", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 0}, {"character", 0}}}}}, {"text", "# x\n"}}}}}));
  CHECK(server.result(*editor, "program/list")["programs"].size() == 1);  // answered in order: the change was handled
  for (const json& m : server.seen) CHECK(m.value("method", "") != "window/showMessage");
  for (const json& m : server.seen) CHECK(m.value("method", "") != "textDocument/publishDiagnostics");

  // Opened again with the editor's text: in sync, and changes apply.
  server.send(*editor, note("textDocument/didClose", {{"textDocument", {{"uri", kUri}}}}));
  server.send(*editor, note("textDocument/didOpen", {{"textDocument", {{"uri", kUri}, {"languageId", "prism"}, {"version", 4}, {"text", kText}}}}));
  diagnostics = next_of(*editor, "textDocument/publishDiagnostics");
  REQUIRE(diagnostics);
  CHECK((*diagnostics)["diagnostics"].empty());
  server.send(*editor, note("textDocument/didChange",
                            {{"textDocument", {{"uri", kUri}, {"version", 5}}},
                             {"contentChanges", {{{"range", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 0}, {"character", 0}}}}}, {"text", "# x\n"}}}}}));
  diagnostics = next_of(*editor, "textDocument/publishDiagnostics");
  REQUIRE(diagnostics);
  CHECK((*diagnostics)["version"] == 5);
}
