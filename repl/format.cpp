#include "repl/format.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

namespace prism::repl {

using json = nlohmann::json;

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

int Table::terminal_columns() {
  if (!::isatty(1)) return 0;
  winsize ws{};
  return ::ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
}

std::string Table::render(const std::string& indent, int columns) const {
  std::vector<size_t> width(headers_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
  };
  measure(headers_);
  for (const auto& r : rows_) measure(r);
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
