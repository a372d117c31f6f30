// Code lenses (issue 15): on each program of a document, a "search" lens and a "tune DIMS" lens
// per set of sizes, whose titles become the results ("N verified families, searched in T s",
// "best X.XXx over eager, Y% of roofline") once any client (an editor or the REPL) has them.
// Clicking one sends workspace/executeCommand, which runs search/run or tune/run with the lens's
// argument as their params, with work-done progress (made by the server when the client allows
// it) that the client can cancel.
//
// Sizes come from the program's tunes so far and from the comment block right above it: a line
// that binds every dim of the program (`# tune: n=8 d=1024`, or the examples' `# Benchmark shape:
// n=16 d=4096.`) is a set of sizes.
#include <cctype>
#include <cstdio>

#include "engine/tune/backends.h"
#include "protocol/convert.h"
#include "protocol/lsp_text.h"
#include "protocol/params.h"
#include "protocol/progress.h"
#include "protocol/server.h"

namespace prism::protocol {

namespace {

constexpr const char* kSearchCommand = "prism.search";
constexpr const char* kTuneCommand = "prism.tune";

using Bindings = std::map<std::string, int64_t>;

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The `name=INTEGER` pairs of one comment line ("eps=1e-6" and "x=1.5" are not integers).
Bindings bindings_in(const std::string& line) {
  Bindings out;
  size_t i = 0;
  while (i < line.size()) {
    if (!word_char(line[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < line.size() && word_char(line[j])) ++j;
    const std::string name = line.substr(i, j - i);
    i = j;
    if (std::isdigit(static_cast<unsigned char>(name[0])) || j >= line.size() || line[j] != '=') continue;
    size_t k = j + 1;
    while (k < line.size() && std::isdigit(static_cast<unsigned char>(line[k]))) ++k;
    const bool fraction = k + 1 < line.size() && line[k] == '.' && std::isdigit(static_cast<unsigned char>(line[k + 1]));
    if (k > j + 1 && k - j - 1 <= 12 && (k == line.size() || !word_char(line[k])) && !fraction)
      out[name] = std::stoll(line.substr(j + 1, k - j - 1));
    i = k;
  }
  return out;
}

// The sizes written in the comment block directly above `line0` (0-based): lines binding exactly
// the program's dims, each positive.
std::vector<Bindings> written_sizes(const LineIndex& index, const std::string& text, int64_t line0, const std::vector<std::string>& dims) {
  std::vector<Bindings> out;
  for (int64_t line = line0 - 1; line >= 0; --line) {
    const size_t begin = *index.offset({line, 0}, PositionEncoding::Utf8);
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string content = text.substr(begin, end - begin);
    const size_t first = content.find_first_not_of(" \t\r");
    if (first == std::string::npos) break;  // a blank line ends the block
    if (content[first] != '#') break;
    Bindings b = bindings_in(content);
    bool exact = b.size() == dims.size();
    for (const auto& d : dims) exact = exact && b.count(d) && b[d] > 0;
    if (exact && std::find(out.begin(), out.end(), b) == out.end()) out.insert(out.begin(), b);
  }
  return out;
}

// "n=8 d=1024", in the program's order of dims.
std::string sizes_text(const Bindings& b, const std::vector<std::string>& dims) {
  std::string out;
  for (const auto& d : dims) {
    auto it = b.find(d);
    if (it == b.end()) continue;
    if (!out.empty()) out += ' ';
    out.append(d).append("=").append(std::to_string(it->second));
  }
  return out;
}

json lens(const json& range, const std::string& title, const char* command, json argument) {
  json c{{"title", title}, {"command", command}};
  if (!argument.is_null()) c["arguments"] = json::array({std::move(argument)});
  return {{"range", range}, {"command", std::move(c)}};
}

}  // namespace

json Server::lens_commands() { return json::array({kSearchCommand, kTuneCommand}); }

json Server::code_lens(Session& session, const json& raw) {
  const NamedDocument doc = named_document(workspace_, raw);
  const LineIndex index(doc.text);
  json out = json::array();
  for (const ProgramDetail& p : workspace_.document_programs(doc.uri)) {
    const std::string& name = p.summary.name;
    const std::vector<std::string>& dims = p.summary.dims;
    const json range = source_range(index, p.summary.pos.begin, name.size(), session.encoding);
    const json program{{"program", name}};

    std::string search_title = "search";
    if (std::optional<SearchResult> searched = workspace_.search_result(name)) {
      char buf[120];
      const size_t n = searched->candidates.size();
      std::snprintf(buf, sizeof buf, "%zu verified %s, searched in %.1f s", n, n == 1 ? "family" : "families", searched->stats.total_s);
      search_title = buf;
    }
    out.push_back(lens(range, search_title, kSearchCommand, program));

    // Tuned sizes first (newest result per sizes and target), then the written ones not yet tuned.
    std::vector<std::pair<Bindings, std::string>> shown;  // sizes, target
    std::vector<tune::TuneResult> tunes = workspace_.tune_results(name);
    for (auto it = tunes.rbegin(); it != tunes.rend(); ++it) {
      const std::string target = tune::target_name(it->target);
      if (std::find(shown.begin(), shown.end(), std::pair{it->bindings, target}) != shown.end()) continue;
      shown.push_back({it->bindings, target});
      char buf[200];
      if (it->best >= 0)
        std::snprintf(buf, sizeof buf, "best %.2fx over eager, %.0f%% of roofline%s (%s, %s)", it->speedup, 100 * it->roofline_fraction,
                      it->measured.noisy ? ", noisy" : "", sizes_text(it->bindings, dims).c_str(), target.c_str());
      else
        std::snprintf(buf, sizeof buf, "no candidate passed (%s, %s)", sizes_text(it->bindings, dims).c_str(), target.c_str());
      out.push_back(lens(range, buf, kTuneCommand, {{"program", name}, {"bindings", it->bindings}, {"target", target}}));
    }
    const std::vector<Bindings> written = written_sizes(index, doc.text, p.summary.pos.begin.line - 1, dims);
    for (const Bindings& b : written) {
      const bool tuned = std::any_of(shown.begin(), shown.end(), [&](const auto& s) { return s.first == b; });
      if (!tuned) out.push_back(lens(range, "tune " + sizes_text(b, dims), kTuneCommand, {{"program", name}, {"bindings", b}}));
    }
    // No sizes known: say how to give some (an empty command is shown and does nothing).
    if (shown.empty() && written.empty() && !dims.empty()) {
      std::string example;
      for (const auto& d : dims) example.append(example.empty() ? "" : " ").append(d).append("=…");
      out.push_back(lens(range, "tune: write `# tune: " + example + "` above the program", "", nullptr));
    } else if (dims.empty() && shown.empty()) {
      out.push_back(lens(range, "tune", kTuneCommand, {{"program", name}, {"bindings", json::object()}}));
    }
  }
  return out;
}

void Server::execute_command(const SessionPtr& session, const Incoming& message) {
  const json& params = params_object(message.params);
  const std::string command = require_string(params, "command");
  if (command != kSearchCommand && command != kTuneCommand)
    throw invalid_params("command", "unknown command '" + command + "'; prismd runs " + lens_commands().dump());
  const json* arguments = find_field(params, "arguments");
  if (!arguments || !arguments->is_array() || arguments->size() != 1 || !(*arguments)[0].is_object())
    throw invalid_params("arguments", "'arguments' must be one object: the params of " +
                                          std::string(command == kSearchCommand ? "search/run" : "tune/run"));
  const json argument = (*arguments)[0];
  // Checked now, so that bad arguments are this request's error and not the progress reply's.
  require_string(argument, "program");
  if (command == kSearchCommand) parse_search_limits(argument);
  else parse_tune_request(argument);
  auto start = [this, session, message, argument, command](json token) {
    if (command == kSearchCommand) start_search(session, message, argument, std::move(token));
    else start_tune(session, message, argument, std::move(token));
  };
  json token = work_done_token(params);
  if (!token.is_null() || !session->work_done_progress) return start(std::move(token));
  // A progress token of the server's own, once the client has it (clangd waits for the reply too).
  static std::atomic<uint64_t> next_token{1};
  token = "prism/progress/" + std::to_string(next_token++);
  session->request("window/workDoneProgress/create", {{"token", token}}, [this, session, message, start, token](const json&, const json& error) {
    try {
      start(error.is_null() ? token : json());
    } catch (const RpcFailure& e) {
      if (message.id) session->send(error_reply(*session, message, e.code(), e.what(), e.data()));
    }
  });
}

void Server::refresh_lenses() {
  std::vector<SessionPtr> editors;
  {
    std::lock_guard lock(sessions_mutex_);
    for (const auto& [id, weak] : sessions_)
      if (SessionPtr s = weak.lock(); s && s->lsp && s->code_lens_refresh && !s->detached()) editors.push_back(s);
  }
  for (const SessionPtr& s : editors) s->request("workspace/codeLens/refresh", nullptr, {});
}

}  // namespace prism::protocol
