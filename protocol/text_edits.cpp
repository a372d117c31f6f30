#include "protocol/text_edits.h"

#include "protocol/params.h"

namespace prism::protocol {

Position parse_position(const json& obj, const std::string& key, const std::string& prefix) {
  const json* pos = optional_object(obj, key, prefix);
  std::string path = field_path(prefix, key);
  if (!pos) throw invalid_params(path, "missing position '" + path + "'");
  Position p{require_int(*pos, "line", path), require_int(*pos, "character", path)};
  if (p.line < 0) throw invalid_params(path + ".line", "'" + path + ".line' must not be negative");
  if (p.character < 0) throw invalid_params(path + ".character", "'" + path + ".character' must not be negative");
  return p;
}

namespace {

std::string describe(Position p) { return std::to_string(p.line) + ":" + std::to_string(p.character); }

}  // namespace

std::vector<TextChange> parse_changes(const json& changes) {
  std::vector<TextChange> out;
  for (size_t i = 0; i < changes.size(); ++i) {
    std::string prefix = "changes[" + std::to_string(i) + "]";
    const json& c = changes[i];
    if (!c.is_object()) throw invalid_params(prefix, "'" + prefix + "' must be an object");
    TextChange change;
    change.text = require_string(c, "text", prefix);
    if (const json* range = optional_object(c, "range", prefix)) {
      std::string path = prefix + ".range";
      change.range = Range{parse_position(*range, "start", path), parse_position(*range, "end", path)};
    }
    out.push_back(std::move(change));
  }
  return out;
}

std::string apply_changes(std::string text, const std::vector<TextChange>& changes, PositionEncoding encoding) {
  for (size_t i = 0; i < changes.size(); ++i) {
    const TextChange& change = changes[i];
    if (!change.range) {
      text = change.text;
      continue;
    }
    std::string field = "changes[" + std::to_string(i) + "].range";
    LineIndex index(text);
    auto begin = index.offset(change.range->start, encoding);
    if (!begin)
      throw invalid_params(field + ".start", "start " + describe(change.range->start) + " of " + field +
                                                 " is outside the text or inside a character (" +
                                                 encoding_name(encoding) + " positions)");
    auto end = index.offset(change.range->end, encoding);
    if (!end)
      throw invalid_params(field + ".end", "end " + describe(change.range->end) + " of " + field +
                                               " is outside the text or inside a character (" +
                                               encoding_name(encoding) + " positions)");
    if (*end < *begin) throw invalid_params(field, field + " ends before it starts");
    text.replace(*begin, *end - *begin, change.text);
  }
  return text;
}

}  // namespace prism::protocol
