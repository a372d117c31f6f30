#include "protocol/lsp_text.h"

#include "protocol/params.h"
#include "protocol/convert.h"

namespace prism::protocol {

const json& text_document(const json& params) {
  const json* doc = optional_object(params, "textDocument");
  if (!doc) throw invalid_params("textDocument", "missing 'textDocument'");
  return *doc;
}

NamedDocument named_document(const Workspace& workspace, const json& params) {
  NamedDocument doc;
  doc.uri = require_string(text_document(params_object(params)), "uri", "textDocument");
  std::optional<std::string> text = workspace.text(doc.uri);
  if (!text) throw RpcFailure(kRequestFailed, "document '" + doc.uri + "' is not open");
  doc.text = std::move(*text);
  return doc;
}

std::string shape_text(const TensorView& v) {
  std::string s = v.dtype + "[";
  for (size_t i = 0; i < v.shape.size(); ++i) s += (i ? ", " : "") + v.shape[i];
  return s + "]";
}

std::pair<int64_t, int64_t> program_lines(const std::vector<ProgramDetail>& programs, size_t i, const LineIndex& index) {
  const int64_t first = programs[i].summary.pos.begin.line - 1;
  const int64_t last = i + 1 < programs.size() ? programs[i + 1].summary.pos.begin.line - 1 : int64_t(index.line_count());
  return {first, last};
}

json source_range(const LineIndex& index, SourcePos pos, size_t length, PositionEncoding encoding) {
  Position start = index.from_source(pos, encoding);
  Position end = index.from_source({pos.line, pos.col + int(length)}, encoding);
  return range_json({start, end});
}

}  // namespace prism::protocol
