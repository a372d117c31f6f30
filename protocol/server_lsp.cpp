// The Language Server Protocol's side of the documents (issue 15): textDocument/didOpen,
// didChange, didClose and didSave over the same document store as program/open (diagnostics go
// out as textDocument/publishDiagnostics), and the language features that read it: hover,
// definition and documentSymbol. Words are matched in the program that encloses the position.
#include <cctype>

#include "engine/ir/ops.h"
#include "protocol/convert.h"
#include "protocol/params.h"
#include "protocol/server.h"
#include "protocol/text_edits.h"

namespace prism::protocol {

namespace {

const json& text_document(const json& params) {
  const json* doc = optional_object(params, "textDocument");
  if (!doc) throw invalid_params("textDocument", "missing 'textDocument'");
  return *doc;
}

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

// The program whose definition encloses 1-based `line`: the last one that starts at or before it.
const ProgramDetail* enclosing(const std::vector<ProgramDetail>& programs, int line) {
  const ProgramDetail* found = nullptr;
  for (const auto& p : programs)
    if (p.summary.pos.begin.line <= line) found = &p;
  return found;
}

std::string shape_text(const TensorView& v) {
  std::string s = v.dtype + "[";
  for (size_t i = 0; i < v.shape.size(); ++i) s += (i ? ", " : "") + v.shape[i];
  return s + "]";
}

// A value of the program by name: its computed values, then its inputs.
const TensorView* find_value(const ProgramDetail& p, const std::string& name) {
  for (const auto& v : p.values)
    if (v.name == name) return &v;
  for (const auto& v : p.summary.inputs)
    if (v.name == name) return &v;
  return nullptr;
}

const char* class_text(OpClass cls) {
  switch (cls) {
    case OpClass::Unary: return "elementwise, one operand";
    case OpClass::Binary: return "elementwise, two operands broadcast NumPy-style";
    case OpClass::Reduce: return "a reduction along `axis`";
    case OpClass::Matmul: return "a matrix product (batched over leading dims)";
    case OpClass::Composite: return "a composite, lowered to primitives before the search";
    default: return "data movement";
  }
}

// A range of the source from a 1-based position over `length` bytes.
json source_range(const LineIndex& index, SourcePos pos, size_t length, PositionEncoding encoding) {
  Position start = index.from_source(pos, encoding);
  Position end = index.from_source({pos.line, pos.col + int(length)}, encoding);
  return range_json({start, end});
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
  change_document(session, require_string(doc, "uri", "textDocument"), require_int(doc, "version", "textDocument"),
                  parse_changes(require_array(params, "contentChanges")));
}

void Server::did_close(Session&, const json& raw) { close_document(require_string(text_document(params_object(raw)), "uri", "textDocument")); }

void Server::did_save(Session& session, const json& raw) {
  // The buffer is already the document (didChange); a save with its text replaces it whole.
  const json& params = params_object(raw);
  const std::string uri = require_string(text_document(params), "uri", "textDocument");
  if (auto text = optional_string(params, "text")) {
    auto state = workspace_.document(uri);
    if (!state) throw RpcFailure(kRequestFailed, "document '" + uri + "' is not open");
    change_document(session, uri, state->version + 1, {TextChange{std::nullopt, *text}});
  }
}

json Server::hover(Session& session, const json& raw) {
  const json& params = params_object(raw);
  const std::string uri = require_string(text_document(params), "uri", "textDocument");
  const std::optional<std::string> text = workspace_.text(uri);
  if (!text) throw RpcFailure(kRequestFailed, "document '" + uri + "' is not open");
  const LineIndex index(*text);
  const std::optional<size_t> offset = index.offset(parse_position(params, "position"), session.encoding);
  if (!offset) throw invalid_params("position", "'position' lies outside the document");
  const Word word = word_at(*text, *offset);
  if (word.text.empty()) return nullptr;
  const Position at = index.position(word.begin, session.encoding);
  const std::vector<ProgramDetail> programs = workspace_.document_programs(uri);
  const ProgramDetail* program = enclosing(programs, int(at.line) + 1);
  std::string markdown;
  if (program && program->summary.name == word.text) {
    markdown = "```prism\n" + program->signature + "\n```";
  } else if (const TensorView* v = program ? find_value(*program, word.text) : nullptr) {
    markdown = "```prism\n" + v->name + ": " + shape_text(*v) + "\n```\n" +
               (v->op.empty() ? "input of `" + program->summary.name + "`" : "computed by `" + v->op + "`");
  } else if (program && std::find(program->summary.dims.begin(), program->summary.dims.end(), word.text) != program->summary.dims.end()) {
    markdown = "dim `" + word.text + "` of `" + program->summary.name + "` (symbolic: bound at `run`/`tune`)";
  } else if (std::optional<Op> op = op_from_name(word.text)) {
    markdown = "`" + word.text + "`: " + class_text(op_class(*op));
  } else {
    return nullptr;
  }
  return {{"contents", {{"kind", "markdown"}, {"value", markdown}}},
          {"range", range_json({at, index.position(word.end, session.encoding)})}};
}

json Server::definition(Session& session, const json& raw) {
  const json& params = params_object(raw);
  const std::string uri = require_string(text_document(params), "uri", "textDocument");
  const std::optional<std::string> text = workspace_.text(uri);
  if (!text) throw RpcFailure(kRequestFailed, "document '" + uri + "' is not open");
  const LineIndex index(*text);
  const std::optional<size_t> offset = index.offset(parse_position(params, "position"), session.encoding);
  if (!offset) throw invalid_params("position", "'position' lies outside the document");
  const Word word = word_at(*text, *offset);
  const std::vector<ProgramDetail> programs = word.text.empty() ? std::vector<ProgramDetail>{} : workspace_.document_programs(uri);
  const ProgramDetail* program = enclosing(programs, int(index.position(word.begin, session.encoding).line) + 1);
  const TensorView* v = program ? find_value(*program, word.text) : nullptr;
  if (!v) return nullptr;
  return {{"uri", uri}, {"range", source_range(index, v->pos, v->name.size(), session.encoding)}};
}

json Server::document_symbol(Session& session, const json& raw) {
  const std::string uri = require_string(text_document(params_object(raw)), "uri", "textDocument");
  const std::optional<std::string> text = workspace_.text(uri);
  if (!text) throw RpcFailure(kRequestFailed, "document '" + uri + "' is not open");
  const LineIndex index(*text);
  const std::vector<ProgramDetail> programs = workspace_.document_programs(uri);
  json out = json::array();
  for (size_t i = 0; i < programs.size(); ++i) {
    const ProgramDetail& p = programs[i];
    // A program reaches from its line to the line before the next program (or the end).
    const Position start{p.summary.pos.begin.line - 1, 0};
    const Position end = i + 1 < programs.size() ? Position{programs[i + 1].summary.pos.begin.line - 1, 0}
                                                 : index.position(text->size(), session.encoding);
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

}  // namespace prism::protocol
