// LSP positions (0-based line, 0-based character in UTF-16 code units or UTF-8 bytes) mapped to
// byte offsets of a UTF-8 text, and the engine's SourcePos (1-based line, 1-based byte column)
// mapped to LSP positions. Lines end at "\n", "\r\n" or "\r", as in LSP.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/diagnostic.h"

namespace prism::protocol {

enum class PositionEncoding { Utf16, Utf8 };

const char* encoding_name(PositionEncoding encoding);  // "utf-16" | "utf-8"

struct Position {
  int64_t line = 0;
  int64_t character = 0;
  bool operator==(const Position&) const = default;
};

struct Range {
  Position start;
  Position end;
  bool operator==(const Range&) const = default;
};

class LineIndex {
 public:
  explicit LineIndex(std::string_view text);

  size_t line_count() const { return starts_.size(); }
  // Byte offset of a position; nullopt when the line or character lies outside the text or the
  // character falls inside a code point (e.g. between the halves of a UTF-16 surrogate pair).
  std::optional<size_t> offset(Position pos, PositionEncoding encoding) const;
  // Position of a byte offset (clamped to the text; an offset inside a code point rounds down).
  Position position(size_t offset, PositionEncoding encoding) const;
  // The engine's 1-based line and byte column, clamped to the text.
  Position from_source(SourcePos pos, PositionEncoding encoding) const;

 private:
  // [begin, end) of a line's content, without its terminator.
  std::string_view line_text(size_t line) const;

  std::string_view text_;
  std::vector<size_t> starts_;  // byte offset of each line's first byte
};

}  // namespace prism::protocol
