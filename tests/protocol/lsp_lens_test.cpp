// Code lenses, workspace/executeCommand with server-made work-done progress, its cancellation,
// signature help and formatting (issue 15).
#include <catch2/catch.hpp>

#include <thread>

#include "in_process.h"

using namespace prism::test;
using namespace std::chrono_literals;

namespace {

json note(const std::string& method, const json& params) { return {{"jsonrpc", "2.0"}, {"method", method}, {"params", params}}; }

const std::string kUri = "file:///tmp/editor/lens.prism";

// An editor that lets the server create progress tokens and refresh lenses.
std::shared_ptr<Peer> editor_with_refresh(InProcess& server) {
  return server.initialized({{"window", {{"workDoneProgress", true}}}, {"workspace", {{"codeLens", {{"refreshSupport", true}}}}}});
}

void open(InProcess& server, Peer& editor, const std::string& text) {
  server.send(editor, note("textDocument/didOpen", {{"textDocument", {{"uri", kUri}, {"languageId", "prism"}, {"version", 1}, {"text", text}}}}));
  for (;;) {
    auto m = editor.next(5s);
    REQUIRE(m);
    if (m->value("method", "") == "textDocument/publishDiagnostics") return;
  }
}

std::vector<std::string> titles(InProcess& server, Peer& editor) {
  json lenses = server.result(editor, "textDocument/codeLens", {{"textDocument", {{"uri", kUri}}}});
  std::vector<std::string> out;
  for (const auto& l : lenses) out.push_back(l["command"]["title"]);
  return out;
}

// Runs a lens's command as an editor does: answers the server's progress-token request, collects
// the $/progress kinds and the refresh requests, and returns the command's response.
struct Executed {
  json response;
  std::vector<std::string> progress;
  int refreshes = 0;
};
Executed execute(InProcess& server, Peer& editor, const json& command) {
  Executed out;
  server.send(editor, {{"jsonrpc", "2.0"}, {"id", "x"}, {"method", "workspace/executeCommand"}, {"params", command}});
  for (;;) {
    auto m = editor.next(120s);
    REQUIRE(m);
    const std::string method = m->value("method", "");
    if (method == "window/workDoneProgress/create") {
      CHECK((*m)["params"]["token"].is_string());
      server.send(editor, {{"jsonrpc", "2.0"}, {"id", (*m)["id"]}, {"result", nullptr}});
    } else if (method == "workspace/codeLens/refresh") {
      ++out.refreshes;
      server.send(editor, {{"jsonrpc", "2.0"}, {"id", (*m)["id"]}, {"result", nullptr}});
    } else if (method == "$/progress") {
      out.progress.push_back((*m)["params"]["value"]["kind"]);
    } else if (m->value("id", json()) == "x") {
      out.response = *m;
      return out;
    }
  }
}

}  // namespace

TEST_CASE("code lenses offer search and tune at the sizes written above a program, then show the results", "[protocol][lsp][lens]") {
  InProcess server;
  auto editor = editor_with_refresh(server);
  auto other = server.initialized();  // an editor without refresh support hears nothing of it
  const std::string text =
      "# nn.Linear's [out, in] weight after an RMSNorm with its gain.\n"
      "# tune: n=2 d=16\n"
      "program rms_proj(X: f32[n, d], g: f32[d], W: f32[d, d]) {\n"
      "  Y = rms_norm(X, eps=1e-6) * g\n"
      "  return matmul(Y, transpose(W))\n"
      "}\n";
  open(server, *editor, text);

  json lenses = server.result(*editor, "textDocument/codeLens", {{"textDocument", {{"uri", kUri}}}});
  REQUIRE(lenses.size() == 2);
  CHECK(lenses[0]["range"]["start"] == json({{"line", 2}, {"character", 8}}));
  CHECK(lenses[0]["command"]["title"] == "search");
  CHECK(lenses[0]["command"]["command"] == "prism.search");
  CHECK(lenses[1]["command"]["title"] == "tune n=2 d=16");
  CHECK(lenses[1]["command"]["arguments"][0] == json({{"program", "rms_proj"}, {"bindings", {{"n", 2}, {"d", 16}}}}));

  Executed search = execute(server, *editor, {{"command", "prism.search"}, {"arguments", lenses[0]["command"]["arguments"]}});
  INFO(search.response.dump());
  REQUIRE(search.response.contains("result"));
  CHECK(search.response["result"]["candidates"].size() > 0);
  CHECK(search.progress.front() == "begin");
  CHECK(search.progress.back() == "end");
  CHECK(search.refreshes == 1);
  std::vector<std::string> after = titles(server, *editor);
  REQUIRE(after.size() == 2);
  CHECK_THAT(after[0], Catch::Matches(R"(\d+ verified famil(y|ies), searched in \d+\.\d s)"));

  Executed tune = execute(server, *editor, {{"command", "prism.tune"}, {"arguments", lenses[1]["command"]["arguments"]}});
  INFO(tune.response.dump());
  REQUIRE(tune.response.contains("result"));
  CHECK(tune.refreshes == 1);
  after = titles(server, *editor);
  REQUIRE(after.size() == 2);
  CHECK_THAT(after[1], Catch::Matches(R"(best \d+\.\d\dx over eager, \d+% of roofline(, noisy)? \(n=2 d=16, cpu\))"));
  // The same state as the REPL's: its tune/results holds what the lens shows.
  CHECK(server.result(*other, "tune/results", {{"program", "rms_proj"}})["results"].size() == 1);
  CHECK(other->pending() == 0);
}

TEST_CASE("a program with no written sizes gets a lens that says how to add them", "[protocol][lsp][lens]") {
  InProcess server;
  auto editor = server.initialized();
  // "eps=1e-6" and a line that binds only some dims are not sizes.
  open(server, *editor, "# n=4 only, eps=1e-6\nprogram p(X: f32[n, d]) {\n  return X * 2\n}\n");
  std::vector<std::string> t = titles(server, *editor);
  REQUIRE(t.size() == 2);
  CHECK(t[1] == "tune: write `# tune: n=… d=…` above the program");
}

TEST_CASE("executeCommand checks its command and arguments; workDoneProgress/cancel stops it", "[protocol][lsp][lens]") {
  InProcess server;
  auto editor = server.initialized();
  server.result(*editor, "program/open", {{"uri", PRISM_SOURCE_DIR "/examples/qk_norm_attention.prism"}});
  auto code = [&](const json& params) { return error_code(server.call(*editor, "workspace/executeCommand", params)); };
  CHECK(code({{"command", "prism.nope"}, {"arguments", json::array({json::object()})}}) == -32602);
  CHECK(code({{"command", "prism.search"}}) == -32602);
  CHECK(code({{"command", "prism.tune"}, {"arguments", {{{"program", "qk_norm_attention"}}}}}) == -32602);  // no bindings

  // A client-made token: window/workDoneProgress/cancel with it cancels the command.
  const json search = {{"program", "qk_norm_attention"}, {"limits", {{"maxOps", 16}, {"threads", 1}, {"budgetSeconds", 60}}}};
  const json params = {{"command", "prism.search"}, {"workDoneToken", "w"}, {"arguments", json::array({search})}};
  server.send(*editor, {{"jsonrpc", "2.0"}, {"id", "long"}, {"method", "workspace/executeCommand"}, {"params", params}});
  for (;;) {
    auto m = editor->next(20s);
    REQUIRE(m);
    if (m->value("method", "") == "$/progress" && (*m)["params"]["value"]["kind"] == "begin") break;
  }
  std::this_thread::sleep_for(100ms);
  server.send(*editor, note("window/workDoneProgress/cancel", {{"token", "w"}}));
  for (;;) {
    auto m = editor->next(20s);
    REQUIRE(m);
    if (m->value("id", json()) != "long") continue;
    CHECK(error_code(*m) == -32800);
    break;
  }
}

TEST_CASE("signature help names the op and the argument being written", "[protocol][lsp]") {
  InProcess server;
  auto editor = server.initialized();
  // Unfinished calls: the document does not parse, and help still works.
  const std::string text =
      "program p(X: f32[n, d]) {  # sum(\n"
      "  S = sum(exp(X), axis=\n"
      "  T = transpose(X, perm=[0, 1\n"
      "  U = concat(X, X, X\n";
  open(server, *editor, text);
  auto help = [&](int line, int character) {
    return server.result(*editor, "textDocument/signatureHelp",
                         {{"textDocument", {{"uri", kUri}}}, {"position", {{"line", line}, {"character", character}}}});
  };
  json sum = help(1, 23);
  REQUIRE(sum.is_object());
  CHECK(sum["signatures"][0]["label"] == "sum(x, axis=-1, keepdims=true)");
  CHECK(sum["activeParameter"] == 1);
  CHECK(sum["signatures"][0]["parameters"][1]["label"] == json({7, 14}));
  CHECK(help(1, 14)["signatures"][0]["label"] == "exp(x)");  // inside exp(…)
  CHECK(help(1, 10)["activeParameter"] == 0);
  json transpose = help(2, 29);  // inside the perm list
  CHECK(transpose["signatures"][0]["label"] == "transpose(x, perm=[...])");
  CHECK(transpose["activeParameter"] == 1);
  CHECK(help(3, 20)["activeParameter"] == 1);  // concat's "..."
  CHECK(help(0, 33).is_null());                // in a comment
  CHECK(help(1, 4).is_null());                 // outside any call

  // Completion carries the same signatures, and inside a call the op's keyword arguments.
  json completion = server.result(*editor, "textDocument/completion", {{"textDocument", {{"uri", kUri}}}, {"position", {{"line", 1}, {"character", 18}}}});
  std::map<std::string, std::string> details;
  for (const auto& item : completion["items"]) details[item["label"]] = item.value("detail", "");
  CHECK(details["sum"] == "sum(x, axis=-1, keepdims=true)");
  CHECK(details["rms_norm"] == "rms_norm(x, eps=0)");
  CHECK(details["keepdims="] == "default: true");
  CHECK(details.count("eps=") == 0);
}

TEST_CASE("formatting answers one edit to the canonical layout, none when there is nothing to do", "[protocol][lsp][format]") {
  InProcess server;
  auto editor = server.initialized();
  open(server, *editor, "program p(X: f32[n, d]) {\n  Y=X*2   \n  return  Y\n}");
  const json params = {{"textDocument", {{"uri", kUri}}}, {"options", {{"tabSize", 4}, {"insertSpaces", true}}}};
  json edits = server.result(*editor, "textDocument/formatting", params);
  REQUIRE(edits.size() == 1);
  CHECK(edits[0]["range"] == json({{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 3}, {"character", 1}}}}));
  CHECK(edits[0]["newText"] == "program p(X: f32[n, d]) {\n  Y = X * 2\n  return Y\n}\n");
  server.send(*editor, note("textDocument/didChange", {{"textDocument", {{"uri", kUri}, {"version", 2}}}, {"contentChanges", {{{"text", edits[0]["newText"]}}}}}));
  CHECK(server.result(*editor, "textDocument/formatting", params).empty());
  // Text that does not parse is left alone.
  server.send(*editor, note("textDocument/didChange", {{"textDocument", {{"uri", kUri}, {"version", 3}}}, {"contentChanges", {{{"text", "program p(X: f32[n] {"}}}}}));
  CHECK(server.result(*editor, "textDocument/formatting", params).empty());
}
