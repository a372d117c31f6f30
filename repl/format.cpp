#include "repl/format.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "engine/util/text.h"

namespace prism::repl {

using json = nlohmann::json;

namespace {

// The length of the UTF-8 sequence at `at` (2 to 4), or 0 when the bytes there are not one.
size_t utf8_sequence(const std::string& text, size_t at) {
  const auto byte = [&](size_t i) { return i < text.size() ? static_cast<unsigned char>(text[i]) : 0u; };
  const unsigned lead = byte(at);
  const size_t length = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 && lead < 0xF0 ? 3 : lead >= 0xC2 && lead < 0xE0 ? 2 : 0;
  for (size_t i = 1; i < length; ++i)
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
  return length;
}

std::string escaped(const char* format, unsigned value) {
  char buf[12];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace

std::string visible_text(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += (c < 0x20 && c != '\n' && c != '\t') || c == 0x7F ? escaped("\\x%02x", c) : std::string(1, char(c));
      ++i;
      continue;
    }
    const size_t length = utf8_sequence(text, i);
    if (length == 0) {
      out += escaped("\\x%02x", c);
      ++i;
    } else if (length == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      out += escaped("\\u%04x", static_cast<unsigned char>(text[i + 1]));  // U+0080..U+009F: C1 controls
      i += 2;
    } else {
      out.append(text, i, length);
      i += length;
    }
  }
  return out;
}

size_t display_width(const std::string& text) {
  return size_t(std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string fit_columns(const std::string& text, size_t columns) {
  if (display_width(text) <= columns) return text;
  const size_t keep = columns > 3 ? columns - 3 : 0;
  size_t used = 0;
  for (size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 && used++ == keep) return text.substr(0, i) + "...";
  return text;
}

std::vector<std::string> wrap_words(const std::string& text, size_t columns) {
  std::vector<std::string> lines;
  std::istringstream words(text);
  std::string line;
  for (std::string word; words >> word;) {
    if (!line.empty() && display_width(line) + 1 + display_width(word) > columns) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

std::string fit_lines(const std::string& text, int columns) {
  if (columns <= 0) return text;
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (display_width(line) < size_t(columns)) {
      out += line + "\n";
      continue;
    }
    const size_t indent = line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' ');
    const size_t room = size_t(std::max(columns - 1 - int(indent) - 2, 20));
    std::vector<std::string> parts = wrap_words(line, room);
    for (size_t i = 0; i < parts.size(); ++i) out += std::string(indent + (i ? 2 : 0), ' ') + parts[i] + "\n";
  }
  if (!text.empty() && text.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

int Table::terminal_columns() {
  if (!::isatty(1)) return 0;
  winsize ws{};
  return ::ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
}

std::vector<size_t> Table::widths() const {
  std::vector<size_t> width(headers_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
  };
  measure(headers_);
  for (const auto& r : rows_) measure(r);
  return width;
}

std::vector<std::string> Table::too_wide(const std::string& indent, int columns) const {
  const std::vector<size_t> width = widths();
  // What a line needs: every column but the last, and the last's first 12 columns.
  size_t need = display_width(indent) + std::min<size_t>(width.back(), 12);
  for (size_t i = 0; i + 1 < width.size(); ++i) need += width[i] + 2;
  std::vector<std::string> dropped;
  for (const std::string& header : droppable_) {
    if (need < size_t(columns)) break;
    const auto at = std::find(headers_.begin(), headers_.end() - 1, header);
    if (at == headers_.end() - 1) continue;
    need -= width[size_t(at - headers_.begin())] + 2;
    dropped.push_back(header);
  }
  return dropped;
}

Table Table::without(const std::vector<std::string>& headers) const {
  Table narrow(*this);
  narrow.droppable_.clear();
  for (const std::string& header : headers) {
    const size_t i = size_t(std::find(narrow.headers_.begin(), narrow.headers_.end(), header) - narrow.headers_.begin());
    narrow.headers_.erase(narrow.headers_.begin() + long(i));
    for (auto& r : narrow.rows_)
      if (i < r.size()) r.erase(r.begin() + long(i));
  }
  return narrow;
}

Table Table::columns_between(size_t first, size_t last) const {
  Table part(std::vector<std::string>(headers_.begin() + long(first), headers_.begin() + long(last)));
  for (const auto& r : rows_) {
    std::vector<std::string> cells;
    for (size_t i = first; i < last; ++i) cells.push_back(i < r.size() ? r[i] : "");
    part.add(std::move(cells));
  }
  part.wrap_ = wrap_;
  return part;
}

std::string Table::render(const std::string& indent, int columns) const {
  if (columns > 0 && split_ && !headers_.empty()) {
    const std::vector<size_t> width = widths();
    size_t total = display_width(indent);
    for (size_t w : width) total += w + 2;
    if (total - 2 >= size_t(columns)) {
      std::string out;
      for (size_t first = 0, last; first < width.size(); first = last) {
        size_t used = display_width(indent) + width[first];
        for (last = first + 1; last < width.size() && used + 2 + width[last] < size_t(columns); ++last) used += 2 + width[last];
        out += columns_between(first, last).render(indent, columns);
      }
      return out;
    }
  }
  if (columns > 0 && !droppable_.empty() && !headers_.empty()) {
    if (const std::vector<std::string> dropped = too_wide(indent, columns); !dropped.empty()) {
      return without(dropped).render(indent, columns) + indent + "(" + join(dropped, ", ") + " left out to fit " + std::to_string(columns) +
             " columns; --json has every column)\n";
    }
  }
  const std::vector<size_t> width = widths();
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line = indent;
    std::vector<std::string> more;  // the last column's wrapped lines after its first
    for (size_t i = 0; i < width.size(); ++i) {
      std::string cell = i < row.size() ? row[i] : "";
      if (i + 1 == width.size() && columns > 0) {
        const size_t room = size_t(std::max(columns - 1 - int(display_width(line)), 12));
        if (wrap_) {
          more = wrap_words(cell, room);
          cell = more.front();
          more.erase(more.begin());
        } else {
          cell = fit_columns(cell, room);
        }
      }
      line += cell;
      if (i + 1 < width.size()) line += std::string(width[i] - display_width(cell) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    size_t column = display_width(indent);  // where the last column starts
    for (size_t i = 0; i + 1 < width.size(); ++i) column += width[i] + 2;
    for (const std::string& rest : more) out += std::string(column, ' ') + rest + "\n";
  };
  emit(headers_);
  for (const auto& r : rows_) emit(r);
  return out;
}

namespace {

// The pieces of `text` between the `sep`s: a summary's clauses ("; "), a clause's ops (", ").
std::vector<std::string> split_on(const std::string& text, const std::string& sep) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t end = text.find(sep, at);
    out.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) return out;
    at = end + sep.size();
  }
}

// Where a clause lists a kernel's ops ("1 custom kernel: matmul, exp"), where they start; else npos.
size_t ops_start(const std::string& clause) {
  for (const char* head : {"kernel: ", "kernels: "})
    if (const size_t at = clause.find(head); at != std::string::npos) return at + std::strlen(head);
  return std::string::npos;
}

// The ops every summary's first op list begins with, when every summary has one and they share
// at least three; then each row's rest keeps its ops after them, marked "…".
void share_op_prefix(SharedClauses& out) {
  std::vector<std::vector<std::string>> ops;
  for (const std::string& rest : out.rest) {
    const size_t at = ops_start(rest);
    if (at == std::string::npos) return;
    const size_t end = rest.find("; ", at);
    ops.push_back(split_on(rest.substr(at, end == std::string::npos ? std::string::npos : end - at), ", "));
  }
  size_t common = ops.empty() ? 0 : ops[0].size();
  for (const auto& o : ops) {
    size_t k = 0;
    while (k < common && k < o.size() && o[k] == ops[0][k]) ++k;
    common = k;
  }
  if (ops.size() < 2 || common < 3) return;
  for (size_t r = 0; r < out.rest.size(); ++r) {
    std::string& rest = out.rest[r];
    const size_t at = ops_start(rest), end = rest.find("; ", at);
    const std::vector<std::string> tail(ops[r].begin() + long(common), ops[r].end());
    rest = rest.substr(0, at) + "…" + join(tail, ", ") + (end == std::string::npos ? "" : rest.substr(end));
  }
  const std::vector<std::string> prefix(ops[0].begin(), ops[0].begin() + long(common));
  out.shared += (out.shared.empty() ? "" : "; ") + std::string("ops begin ") + join(prefix, ", ") + " (… below)";
}

}  // namespace

SharedClauses shared_clauses(const std::vector<std::string>& summaries) {
  SharedClauses out;
  std::vector<std::vector<std::string>> clauses;
  for (const auto& s : summaries) clauses.push_back(split_on(s, "; "));
  std::vector<std::string> shared;
  if (summaries.size() >= 2)
    for (const auto& c : clauses[0])
      if (std::all_of(clauses.begin(), clauses.end(), [&](const auto& cs) { return std::find(cs.begin(), cs.end(), c) != cs.end(); }))
        shared.push_back(c);
  out.shared = join(shared, "; ");
  for (const auto& cs : clauses) {
    std::vector<std::string> rest;
    for (const auto& c : cs)
      if (std::find(shared.begin(), shared.end(), c) == shared.end()) rest.push_back(c);
    out.rest.push_back(rest.empty() ? "(only the shared clauses)" : join(rest, "; "));
  }
  share_op_prefix(out);
  return out;
}

std::string tensor_type(const json& tensor) {
  std::string s = tensor.value("dtype", std::string("?")) + "[";
  const json& shape = tensor.contains("shape") ? tensor["shape"] : json::array();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i].is_string() ? shape[i].get<std::string>() : shape[i].dump();
  }
  return s + "]";
}

std::string tensor_decl(const json& tensor) { return tensor.value("name", std::string("?")) + ": " + tensor_type(tensor); }

std::string number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

std::string duration_text(double ms) {
  char buf[32];
  const double us = ms * 1000;
  if (us < 0.995) std::snprintf(buf, sizeof buf, "%.2f µs", us);
  else if (us < 99.95) std::snprintf(buf, sizeof buf, "%.1f µs", us);
  else std::snprintf(buf, sizeof buf, ms < 9.9995 ? "%.3f ms" : "%.1f ms", ms);
  return buf;
}

std::string display_path(const std::string& uri) {
  std::string path = uri.rfind("file://", 0) == 0 ? uri.substr(7) : uri;
  std::error_code ec;
  auto cwd = std::filesystem::current_path(ec);
  if (!ec && !path.empty() && path[0] == '/') {
    auto rel = std::filesystem::path(path).lexically_relative(cwd);
    if (!rel.empty() && rel.native().rfind("..", 0) != 0) return rel.string();
  }
  return path;
}

std::string diagnostic_text(const std::string& file, const json& d, const std::string& source, int line_offset) {
  int line = 0, col = 0;
  if (d.contains("range")) {
    line = d["range"]["start"].value("line", 0);
    col = d["range"]["start"].value("character", 0);
  }
  int severity = d.value("severity", 1);
  const char* level = severity == 1 ? "error" : severity == 2 ? "warning" : "note";
  std::ostringstream out;
  out << file << ":" << line + 1 + line_offset << ":" << col + 1 << ": " << level << ": " << d.value("message", std::string());
  // The source line and a caret under the column, as compilers print them.
  std::istringstream lines(source);
  std::string text;
  for (int i = 0; i <= line && std::getline(lines, text); ++i) {
    if (i == line) {
      out << "\n    " << text << "\n    ";
      for (int c = 0; c < col && c < static_cast<int>(text.size()); ++c) out << (text[c] == '\t' ? '\t' : ' ');
      out << "^";
    }
  }
  return out.str();
}

}  // namespace prism::repl
