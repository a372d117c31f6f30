// prism's on-disk caches (compiled kernels, PTX, the CPU description): where they live, and the
// content keys that name their entries.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/util/hash.h"
#include "engine/util/user_dirs.h"

namespace prism {

// The variable's value, or `fallback` when it is unset or empty.
inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// $PRISM_CACHE_DIR/<sub>, else $XDG_CACHE_HOME/prism/<sub>, else <home>/.cache/prism/<sub> (never
// a shared directory: empty when there is no home, and ensure_private_dir then says so).
inline std::string prism_cache_dir(const std::string& sub) {
  if (auto dir = env_or("PRISM_CACHE_DIR", ""); !dir.empty()) return dir + "/" + sub;
  if (auto dir = env_or("XDG_CACHE_HOME", ""); !dir.empty()) return dir + "/prism/" + sub;
  std::string home = home_dir();
  return home.empty() ? std::string() : home + "/.cache/prism/" + sub;
}

// 32 hex digits naming `text` (two FNV-1a hashes, the second salted): collisions between cache
// entries are out of the question in practice, and the name is stable across runs.
inline std::string content_key(std::string_view text, const std::string& salt) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(fnv1a64(text)),
                static_cast<unsigned long long>(fnv1a64(salt + std::string(text))));
  return buf;
}

// The first `lines` lines of a tool's output, "..." when there was more: enough to see an error.
inline std::string first_lines(const std::string& text, int lines) {
  size_t pos = 0;
  for (int i = 0; i < lines && pos != std::string::npos; ++i) {
    pos = text.find('\n', pos);
    if (pos != std::string::npos) ++pos;
  }
  return pos == std::string::npos ? text : text.substr(0, pos) + "...";
}

}  // namespace prism
