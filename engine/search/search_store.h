// Searches kept on disk (docs/search.md, "The search store"): a complete search is stored beside
// the tuning DB whose answers name its families (the daemon's state directory), keyed by what decides what it finds (the lowered program's text, the limits but for its
// threads and budget, the engine's build), so a new daemon or a second Python process answers the
// same program with no search. Entries are sealed (sealed_file.h) in a private directory; each
// family read back is parsed, validated and must hash to the canonical hash it was stored with,
// or the entry is a miss and is searched again.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "engine/ir/program.h"
#include "engine/search/search.h"

namespace prism::search {

std::string search_key(const Program& lowered, const SearchLimits& limits);

// The text form of a search's families and statistics, and back; nothing for text that is not
// one, or whose families do not read back as they were found.
std::string format_search(const SearchResult& result);
std::optional<SearchResult> parse_search(std::string_view text);

class SearchStore {
 public:
  // `dir`: made private on first use (below the cache root, every directory from the root down is
  // checked: cache.h); empty: off. Entries live in a subdirectory named after the engine's build,
  // the one part of the key a rebuild changes, so that prune_other_builds can drop the rest.
  void set_dir(const std::string& dir) { dir_ = dir.empty() ? dir : build_dir(dir); }
  static std::string build_dir(const std::string& dir);  // this build's subdirectory of `dir`
  bool enabled() const { return !dir_.empty(); }
  // The stored search with `stats.from_store` set, or nothing (a miss, or an entry that failed
  // its checks, which is then removed).
  std::optional<SearchResult> get(const std::string& key) const;
  // Keeps a complete search (one cut short by its budget or cancelled is not the answer to keep).
  // Throws nothing: a store that cannot be written costs a search next time.
  void put(const std::string& key, const SearchResult& result) const;
  // Removes the stores of other builds under `dir` not written for `days` days (a developer's
  // every rebuild leaves one behind); returns how many. Another build's daemon that is still in
  // use only searches again.
  static int prune_other_builds(const std::string& dir, int days = 7);

 private:
  std::string dir_;
};

}  // namespace prism::search
