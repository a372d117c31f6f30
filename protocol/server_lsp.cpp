// The Language Server Protocol's side of the documents (issue 15): textDocument/didOpen,
// didChange, didClose and didSave over the same document store as program/open (diagnostics go
// out as textDocument/publishDiagnostics), and the language features that read it: hover,
// definition, references, documentSymbol, inlayHint and completion. Words are matched in the
// program that encloses the position.
#include <cctype>

#include "engine/ir/ops.h"
#include "engine/lang/format.h"
#include "engine/lang/op_signature.h"
#include "protocol/convert.h"
#include "protocol/lsp_text.h"
#include "protocol/params.h"
#include "protocol/server.h"
#include "protocol/text_edits.h"

namespace prism::protocol {

namespace {

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The identifier at (or just before) `offset`, with its byte range; empty when there is none.
struct Word {
  std::string text;
  size_t begin = 0, end = 0;
};
Word word_at(const std::string& text, size_t offset) {
  size_t b = std::min(offset, text.size()), e = b;
  while (b > 0 && is_word(text[b - 1])) --b;
  while (e < text.size() && is_word(text[e])) ++e;
  if (b == e || std::isdigit(static_cast<unsigned char>(text[b]))) return {};
  return {text.substr(b, e - b), b, e};
}

// A value of the program by name: its computed values, then its inputs.
const TensorView* find_value(const ProgramDetail& p, const std::string& name) {
  for (const auto& v : p.values)
    if (v.name == name) return &v;
  for (const auto& v : p.summary.inputs)
    if (v.name == name) return &v;
  return nullptr;
}

// An op's help as hover and completion show it: its signature, then what it computes.
std::string op_markdown(Op op) { return "```prism\n" + op_signature(op) + "\n```\n" + op_summary(op); }

// The innermost op call whose argument list holds `offset`: scanned forward from `begin` (a
// line start outside any call), so comments and nested brackets are skipped as the parser does.
struct EnclosingCall {
  Op op;
  int commas = 0;       // top-level commas before the offset: the positional argument's index
  std::string keyword;  // the `name=` the current argument started with, if any
};
std::optional<EnclosingCall> enclosing_call(const std::string& text, size_t begin, size_t offset) {
  struct Open {
    std::string callee;  // empty: a list or a parenthesized expression
    int commas = 0;
    std::string keyword;
  };
  std::vector<Open> stack;
  std::string last_word;  // the identifier just before the current character, if nothing came between
  for (size_t i = begin; i < offset && i < text.size(); ++i) {
    const char c = text[i];
    if (c == '#') {
      while (i < offset && text[i] != '\n') ++i;
      last_word.clear();
      continue;
    }
    if (is_word(c)) {
      size_t j = i;
      while (j < offset && is_word(text[j])) ++j;
      last_word = text.substr(i, j - i);
      i = j - 1;
      continue;
    }
    if (c == ' ' || c == '\t') continue;
    if (c == '(' || c == '[') stack.push_back({c == '(' ? last_word : std::string(), 0, {}});
    else if ((c == ')' || c == ']') && !stack.empty()) stack.pop_back();
    else if (c == '{' || c == '}') stack.clear();
    else if (c == ',' && !stack.empty()) stack.back().commas++, stack.back().keyword.clear();
    else if (c == '=' && !stack.empty() && !last_word.empty()) stack.back().keyword = last_word;
    last_word.clear();
  }
  // Inside a list (perm=[…]) or parentheses, the call around them.
  for (size_t k = stack.size(); k-- > 0;) {
    if (stack[k].callee.empty()) continue;
    std::optional<Op> op = op_from_name(stack[k].callee);
    if (!op) return std::nullopt;
    return EnclosingCall{*op, stack[k].commas, stack[k].keyword};
  }
  return std::nullopt;
}

// Which parameter of op_signature_params the argument being written is.
int active_parameter(const EnclosingCall& call) {
  const std::vector<ParamSpec> params = op_params(call.op);
  const int shift = call.op == Op::Concat ? 2 : 0;  // concat's signature starts "x, ..."
  for (size_t i = 0; i < params.size(); ++i)
    if (call.keyword == params[i].name) return int(i) + shift;
  if (call.op == Op::Concat) return std::min(call.commas, 1);
  return call.commas;
}

// The byte ranges of the identifier `name` in text[begin, end), outside comments.
std::vector<std::pair<size_t, size_t>> occurrences(const std::string& text, size_t begin, size_t end, const std::string& name) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = begin; i < end && i < text.size();) {
    if (text[i] == '#') {
      while (i < end && text[i] != '\n') ++i;
    } else if (is_word(text[i])) {
      size_t j = i;
      while (j < text.size() && is_word(text[j])) ++j;
      if (text.compare(i, j - i, name) == 0 && j - i == name.size()) out.push_back({i, j});
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

// The word at a request's position, the document's text, its programs and the one enclosing it.
struct AtPosition {
  std::string uri, text;
  std::optional<LineIndex> index;
  Word word;
  std::vector<ProgramDetail> programs;
  int program = -1;  // index into programs; -1: outside every program
};

AtPosition at_position(const Workspace& workspace, const Session& session, const json& params) {
  AtPosition at;
  NamedDocument doc = named_document(workspace, params);
  at.uri = std::move(doc.uri);
  at.text = std::move(doc.text);
  at.index.emplace(at.text);
  const std::optional<size_t> offset = at.index->offset(parse_position(params, "position"), session.encoding);
  if (!offset) throw invalid_params("position", "'position' lies outside the document");
  at.word = word_at(at.text, *offset);
  at.programs = workspace.document_programs(at.uri);
  const int line = int(at.index->position(*offset, session.encoding).line) + 1;
  for (size_t i = 0; i < at.programs.size(); ++i)
    if (at.programs[i].summary.pos.begin.line <= line) at.program = int(i);
  return at;
}

// The bytes [begin, end) of the program that encloses the position: from its name's line to the
// next program's. The whole text outside every program.
std::pair<size_t, size_t> program_bytes(const AtPosition& at) {
  if (at.program < 0) return {0, at.text.size()};
  const auto [first, last] = program_lines(at.programs, size_t(at.program), *at.index);
  const size_t begin = *at.index->offset({first, 0}, PositionEncoding::Utf8);
  const size_t end = last < int64_t(at.index->line_count()) ? *at.index->offset({last, 0}, PositionEncoding::Utf8) : at.text.size();
  return {begin, end};
}

}  // namespace

void Server::did_open(Session& session, const json& raw) {
  const json& doc = text_document(params_object(raw));
  session.lsp = true;
  const std::string uri = require_string(doc, "uri", "textDocument");
  const std::string text = require_string(doc, "text", "textDocument");
  open_document(session, uri, text, optional_int(doc, "version", "textDocument").value_or(0), /*replace=*/false,
                /*reject_errors=*/false, /*from_disk=*/false);
}

void Server::did_change(Session& session, const json& raw) {
  const json& params = params_object(raw);
  const json& doc = text_document(params);
  session.lsp = true;
  const std::string uri = require_string(doc, "uri", "textDocument");
  const int64_t version = require_int(doc, "version", "textDocument");
  const std::vector<TextChange> changes = parse_changes(require_array(params, "contentChanges"));
  {
    std::lock_guard lock(docs_mutex_);
    if (out_of_sync_.count(uri)) return;  // told once already; the changes apply to a text prism lacks
  }
  // A notification has no answer: a refused edit is told to the editor, never only logged.
  try {
    change_document(session, uri, version, changes);
  } catch (const RpcFailure& e) {
    if (!workspace_.document(uri)) throw;  // not open: the usual error
    refuse_edit(session, uri, e.what());
  } catch (const Error& e) {
    refuse_edit(session, uri, e.what());
  }
}

void Server::did_close(Session&, const json& raw) { close_document(require_string(text_document(params_object(raw)), "uri", "textDocument")); }

void Server::did_save(Session& session, const json& raw) {
  // The buffer is already the document (didChange); a save with its text replaces it whole.
  const json& params = params_object(raw);
  const std::string uri = require_string(text_document(params), "uri", "textDocument");
  if (auto text = optional_string(params, "text")) {
    auto state = workspace_.document(uri);
    if (!state) throw RpcFailure(kRequestFailed, "document '" + uri + "' is not open");
    {
      std::lock_guard lock(docs_mutex_);
      out_of_sync_.erase(uri);  // the whole text: in sync again once it is taken
    }
    try {
      change_document(session, uri, state->version + 1, {TextChange{std::nullopt, *text}});
    } catch (const Error& e) {
      refuse_edit(session, uri, e.what());
    }
  }
}

json Server::hover(Session& session, const json& raw) {
  const AtPosition at = at_position(workspace_, session, params_object(raw));
  const std::string& word = at.word.text;
  if (word.empty()) return nullptr;
  const ProgramDetail* program = at.program >= 0 ? &at.programs[size_t(at.program)] : nullptr;
  std::string markdown;
  if (program && program->summary.name == word) {
    markdown = "```prism\n" + program->signature + "\n```";
  } else if (const TensorView* v = program ? find_value(*program, word) : nullptr) {
    markdown = "```prism\n" + v->name + ": " + shape_text(*v) + "\n```\n" +
               (v->op.empty() ? "input of `" + program->summary.name + "`" + (v->domain.empty() ? "" : ", declared `" + v->domain + "`")
                              : "computed by `" + v->op + "`");
  } else if (program && std::find(program->summary.dims.begin(), program->summary.dims.end(), word) != program->summary.dims.end()) {
    markdown = "dim `" + word + "` of `" + program->summary.name + "` (symbolic: bound at `run`/`tune`)";
  } else if (std::optional<Op> op = op_from_name(word)) {
    markdown = op_markdown(*op);
  } else {
    return nullptr;
  }
  return {{"contents", {{"kind", "markdown"}, {"value", markdown}}},
          {"range", range_json({at.index->position(at.word.begin, session.encoding), at.index->position(at.word.end, session.encoding)})}};
}

json Server::definition(Session& session, const json& raw) {
  // A value: its assignment (an input: its declaration). A dim: where the program's inputs first
  // name it, which is what binds it.
  const AtPosition at = at_position(workspace_, session, params_object(raw));
  if (at.program < 0 || at.word.text.empty()) return nullptr;
  const ProgramDetail& p = at.programs[size_t(at.program)];
  if (const TensorView* v = find_value(p, at.word.text))
    return {{"uri", at.uri}, {"range", source_range(*at.index, v->pos, v->name.size(), session.encoding)}};
  if (std::find(p.summary.dims.begin(), p.summary.dims.end(), at.word.text) == p.summary.dims.end()) return nullptr;
  const auto [begin, end] = program_bytes(at);
  const auto uses = occurrences(at.text, begin, end, at.word.text);
  if (uses.empty()) return nullptr;
  return {{"uri", at.uri},
          {"range", range_json({at.index->position(uses[0].first, session.encoding), at.index->position(uses[0].second, session.encoding)})}};
}

json Server::document_symbol(Session& session, const json& raw) {
  const NamedDocument doc = named_document(workspace_, raw);
  const LineIndex index(doc.text);
  const std::vector<ProgramDetail> programs = workspace_.document_programs(doc.uri);
  json out = json::array();
  for (size_t i = 0; i < programs.size(); ++i) {
    const ProgramDetail& p = programs[i];
    // A program reaches from its line to the line before the next program (or the end).
    const auto [first, last] = program_lines(programs, i, index);
    const Position start{first, 0};
    const Position end = last < int64_t(index.line_count()) ? Position{last, 0} : index.position(doc.text.size(), session.encoding);
    json children = json::array();
    auto symbol = [&](const TensorView& v) {
      const json range = source_range(index, v.pos, v.name.size(), session.encoding);
      children.push_back({{"name", v.name}, {"detail", shape_text(v)}, {"kind", 13}, {"range", range}, {"selectionRange", range}});
    };
    for (const auto& v : p.summary.inputs) symbol(v);
    for (const auto& v : p.values) symbol(v);
    out.push_back({{"name", p.summary.name},
                   {"detail", p.signature},
                   {"kind", 12},
                   {"range", range_json({start, end})},
                   {"selectionRange", source_range(index, p.summary.pos.begin, p.summary.name.size(), session.encoding)},
                   {"children", std::move(children)}});
  }
  return out;
}

json Server::references(Session& session, const json& raw) {
  const json& params = params_object(raw);
  AtPosition at = at_position(workspace_, session, params);
  if (at.word.text.empty() || at.program < 0) return json::array();
  const ProgramDetail& p = at.programs[size_t(at.program)];
  const bool declaration = optional_object(params, "context") ? optional_bool(params["context"], "includeDeclaration", "context").value_or(true) : true;
  const TensorView* v = find_value(p, at.word.text);
  const bool dim = std::find(p.summary.dims.begin(), p.summary.dims.end(), at.word.text) != p.summary.dims.end();
  if (!v && !dim && p.summary.name != at.word.text) return json::array();
  const auto [begin, end] = program_bytes(at);
  json out = json::array();
  for (const auto& [b, e] : occurrences(at.text, begin, end, at.word.text)) {
    const Position start = at.index->position(b, session.encoding);
    if (!declaration && v && start == at.index->from_source(v->pos, session.encoding)) continue;
    out.push_back({{"uri", at.uri}, {"range", range_json({start, at.index->position(e, session.encoding)})}});
  }
  return out;
}

json Server::inlay_hint(Session& session, const json& raw) {
  // Every named value of the document's programs: ": f16[n, d]" after its name.
  const NamedDocument doc = named_document(workspace_, raw);
  const LineIndex index(doc.text);
  json out = json::array();
  for (const ProgramDetail& p : workspace_.document_programs(doc.uri))
    for (const TensorView& v : p.values)
      out.push_back({{"position", position_json(index.from_source({v.pos.line, v.pos.col + int(v.name.size())}, session.encoding))},
                     {"label", ": " + shape_text(v)},
                     {"kind", 1},
                     {"paddingLeft", false}});
  return out;
}

json Server::completion(Session& session, const json& raw) {
  // Ops (with their kind), the enclosing program's values, inputs and dims, keywords and dtypes;
  // the client filters by what is typed.
  AtPosition at = at_position(workspace_, session, params_object(raw));
  json items = json::array();
  for (const std::string& name : op_names())
    if (std::optional<Op> op = op_from_name(name))
      items.push_back({{"label", name}, {"kind", 3}, {"detail", op_signature(*op)}, {"documentation", {{"kind", "markdown"}, {"value", op_summary(*op)}}}});
  // Inside a call: the op's keyword arguments.
  if (std::optional<EnclosingCall> call = enclosing_call(at.text, program_bytes(at).first, at.word.begin))
    for (const ParamSpec& p : op_params(call->op))
      if (!p.required) items.push_back({{"label", std::string(p.name) + "="}, {"kind", 5}, {"detail", std::string("default: ") + p.fallback}});
  if (at.program >= 0) {
    const ProgramDetail& p = at.programs[size_t(at.program)];
    for (const auto& v : p.summary.inputs) items.push_back({{"label", v.name}, {"kind", 6}, {"detail", shape_text(v)}});
    for (const auto& v : p.values) items.push_back({{"label", v.name}, {"kind", 6}, {"detail", shape_text(v)}});
    for (const auto& d : p.summary.dims) items.push_back({{"label", d}, {"kind", 21}, {"detail", "dim of " + p.summary.name}});
  }
  for (const char* keyword : {"program", "return", "f32", "f16", "bf16"}) items.push_back({{"label", keyword}, {"kind", 14}});
  return {{"isIncomplete", false}, {"items", std::move(items)}};
}

json Server::signature_help(Session& session, const json& raw) {
  const AtPosition at = at_position(workspace_, session, params_object(raw));
  const std::optional<size_t> offset = at.index->offset(parse_position(params_object(raw), "position"), session.encoding);
  const std::optional<EnclosingCall> call = enclosing_call(at.text, program_bytes(at).first, *offset);
  if (!call) return nullptr;
  json parameters = json::array();
  for (const auto& [b, e] : op_signature_params(call->op)) parameters.push_back({{"label", {b, e}}});
  return {{"signatures", json::array({{{"label", op_signature(call->op)},
                                       {"documentation", {{"kind", "markdown"}, {"value", op_summary(call->op)}}},
                                       {"parameters", std::move(parameters)}}})},
          {"activeSignature", 0},
          {"activeParameter", active_parameter(*call)}};
}

json Server::formatting(Session& session, const json& raw) {
  // One edit that replaces the whole text, or none: unchanged, or text that does not parse
  // (format-on-save must not fight the user mid-edit). The layout is prism's; `options` is ignored.
  const NamedDocument doc = named_document(workspace_, raw);
  const std::optional<std::string> formatted = format_source(doc.text);
  if (!formatted || *formatted == doc.text) return json::array();
  const LineIndex index(doc.text);
  return json::array({{{"range", range_json({{0, 0}, index.position(doc.text.size(), session.encoding)})}, {"newText", *formatted}}});
}

}  // namespace prism::protocol
