#include "protocol/positions.h"

#include <algorithm>

namespace prism::protocol {

namespace {

// Length in bytes of the UTF-8 sequence a lead byte starts; stray continuation bytes and invalid
// leads count as one byte so that malformed text still maps somewhere.
size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xF0 && lead <= 0xF7) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

// Code units one code point takes in the encoding.
size_t units(size_t bytes, PositionEncoding encoding) {
  if (encoding == PositionEncoding::Utf8) return bytes;
  return bytes == 4 ? 2 : 1;  // astral code points are surrogate pairs in UTF-16
}

}  // namespace

const char* encoding_name(PositionEncoding encoding) {
  return encoding == PositionEncoding::Utf8 ? "utf-8" : "utf-16";
}

LineIndex::LineIndex(std::string_view text) : text_(text) {
  starts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
      starts_.push_back(i + 1);
    } else if (text[i] == '\n') {
      starts_.push_back(i + 1);
    }
  }
}

std::string_view LineIndex::line_text(size_t line) const {
  size_t begin = starts_[line];
  size_t end = text_.size();
  if (line + 1 < starts_.size()) {
    // Every line but the last ends in a terminator: "\r\n", "\n" or "\r".
    end = starts_[line + 1];
    end -= (end - begin >= 2 && text_[end - 2] == '\r' && text_[end - 1] == '\n') ? 2 : 1;
  }
  return text_.substr(begin, end - begin);
}

std::optional<size_t> LineIndex::offset(Position pos, PositionEncoding encoding) const {
  if (pos.line < 0 || pos.character < 0 || static_cast<size_t>(pos.line) >= starts_.size()) return std::nullopt;
  std::string_view line = line_text(static_cast<size_t>(pos.line));
  size_t want = static_cast<size_t>(pos.character);
  size_t byte = 0, unit = 0;
  while (unit < want) {
    if (byte >= line.size()) return std::nullopt;  // past the end of the line
    size_t len = std::min(sequence_length(static_cast<unsigned char>(line[byte])), line.size() - byte);
    unit += units(len, encoding);
    byte += len;
  }
  if (unit != want) return std::nullopt;  // inside a code point
  return starts_[static_cast<size_t>(pos.line)] + byte;
}

Position LineIndex::position(size_t offset, PositionEncoding encoding) const {
  offset = std::min(offset, text_.size());
  size_t line = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
  std::string_view content = line_text(line);
  size_t limit = std::min(offset - starts_[line], content.size());
  size_t byte = 0, unit = 0;
  while (byte < limit) {
    size_t len = std::min(sequence_length(static_cast<unsigned char>(content[byte])), content.size() - byte);
    if (byte + len > limit) break;
    unit += units(len, encoding);
    byte += len;
  }
  return {static_cast<int64_t>(line), static_cast<int64_t>(unit)};
}

Position LineIndex::from_source(SourcePos pos, PositionEncoding encoding) const {
  if (pos.line < 1) return {0, 0};
  size_t line = static_cast<size_t>(pos.line) - 1;
  if (line >= starts_.size()) return position(text_.size(), encoding);
  size_t col = pos.col < 1 ? 0 : static_cast<size_t>(pos.col) - 1;
  col = std::min(col, line_text(line).size());
  return position(starts_[line] + col, encoding);
}

}  // namespace prism::protocol
