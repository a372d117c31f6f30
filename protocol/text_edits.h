// LSP content changes: each replaces a range (or, without one, the whole text); they apply in order,
// each against the text the previous ones produced.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "protocol/jsonrpc.h"
#include "protocol/positions.h"

namespace prism::protocol {

struct TextChange {
  std::optional<Range> range;
  std::string text;
};

// The position `key` of `obj` ({line, character}, both non-negative); InvalidParams naming it.
Position parse_position(const json& obj, const std::string& key, const std::string& prefix = "");

// Parses `changes` of program/change; malformed entries are InvalidParams naming "changes[i]...".
std::vector<TextChange> parse_changes(const json& changes);

// Applies the changes in order. A range outside the text, inside a code point, or with its end
// before its start is InvalidParams naming "changes[i].range".
std::string apply_changes(std::string text, const std::vector<TextChange>& changes, PositionEncoding encoding);

}  // namespace prism::protocol
