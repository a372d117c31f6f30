// What the LSP features (server_lsp.cpp, server_lens.cpp) share about a document's text: its
// `textDocument` param, where a program's lines lie, and LSP ranges of source positions.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "engine/workspace/workspace.h"
#include "protocol/jsonrpc.h"
#include "protocol/positions.h"

namespace prism::protocol {

// params.textDocument; InvalidParams when missing or not an object.
const json& text_document(const json& params);

// The document a request names (params.textDocument.uri) and its text; RequestFailed when it is
// not open.
struct NamedDocument {
  std::string uri, text;
};
NamedDocument named_document(const Workspace& workspace, const json& params);

// "f16[n, d]"
std::string shape_text(const TensorView& v);

// The 0-based lines [first, last) of programs[i]: from its name's line to the next program's.
std::pair<int64_t, int64_t> program_lines(const std::vector<ProgramDetail>& programs, size_t i, const LineIndex& index);

// The LSP range of `length` bytes from a 1-based source position.
json source_range(const LineIndex& index, SourcePos pos, size_t length, PositionEncoding encoding);

}  // namespace prism::protocol
