// prism's on-disk caches (compiled kernels, PTX, the CPU description): where they live, and the
// content keys that name their entries.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "engine/util/hash.h"
#include "engine/util/user_dirs.h"

namespace prism {

// The variable's value, or `fallback` when it is unset or empty.
inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// $PRISM_CACHE_DIR, else $XDG_CACHE_HOME/prism, else <home>/.cache/prism (never a shared
// directory: empty when there is no home, and PrivateDir then says so). Every directory from
// here down is checked before a cache entry is read or written (private_dir.h).
inline std::string prism_cache_root() {
  if (auto dir = env_or("PRISM_CACHE_DIR", ""); !dir.empty()) return dir;
  if (auto dir = env_or("XDG_CACHE_HOME", ""); !dir.empty()) return dir + "/prism";
  std::string home = home_dir();
  return home.empty() ? std::string() : home + "/.cache/prism";
}

// prism_cache_root()/<sub>; empty when there is no root.
inline std::string prism_cache_dir(const std::string& sub) {
  const std::string root = prism_cache_root();
  return root.empty() ? root : root + "/" + sub;
}

// Where the check of a cache directory starts: {prism_cache_root(), the rest} when `dir` lies
// below the root, else {dir, ""} (a directory named explicitly is its own root).
inline std::pair<std::string, std::string> cache_root_and_sub(const std::string& dir) {
  const std::string root = prism_cache_root();
  if (!root.empty() && dir.size() > root.size() + 1 && dir.compare(0, root.size(), root) == 0 && dir[root.size()] == '/')
    return {root, dir.substr(root.size() + 1)};
  return {dir, ""};
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
