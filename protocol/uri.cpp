#include "protocol/uri.h"

#include <cctype>
#include <filesystem>
#include <string_view>

namespace prism::protocol {

namespace {

// RFC 3986 scheme ":" — but a single letter followed by ":" is not treated specially either way,
// since prismd runs on POSIX systems where paths start with "/" or a name.
bool has_scheme(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (size_t i = 1; i < s.size(); ++i) {
    char c = s[i];
    if (c == ':') return true;
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return false;
  }
  return false;
}

bool starts_with_ci(const std::string& s, const char* prefix) {
  size_t i = 0;
  for (; prefix[i]; ++i)
    if (i >= s.size() || std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string percent_encode_path(const std::string& path) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    // pchar of RFC 3986 plus "/": unreserved, sub-delims, ":" and "@" stay as they are.
    if (std::isalnum(c) || std::string_view("-._~!$&'()*+,;=:@/").find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::optional<std::string> percent_decode(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    int hi = hex_value(text[i + 1]), lo = hex_value(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string document_uri(const std::string& uri_or_path) {
  if (uri_or_path.empty() || has_scheme(uri_or_path)) return uri_or_path;
  std::filesystem::path p = std::filesystem::absolute(uri_or_path).lexically_normal();
  return "file://" + percent_encode_path(p.string());
}

std::optional<std::string> local_path(const std::string& uri_or_path) {
  if (uri_or_path.empty()) return std::nullopt;
  if (!has_scheme(uri_or_path)) return uri_or_path;
  if (!starts_with_ci(uri_or_path, "file://")) return std::nullopt;
  std::string rest = uri_or_path.substr(7);
  size_t slash = rest.find('/');
  if (slash == std::string::npos) return std::nullopt;
  std::string host = rest.substr(0, slash);
  if (!host.empty() && host != "localhost") return std::nullopt;
  // Query and fragment are not part of the path.
  std::string path = rest.substr(slash);
  if (size_t cut = path.find_first_of("?#"); cut != std::string::npos) path.resize(cut);
  return percent_decode(path);
}

}  // namespace prism::protocol
