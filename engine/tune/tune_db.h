// The tuning DB (docs/design.md §5): tuning results on disk, keyed by (program, bindings, target,
// prism version), so the same question is never tuned twice, across daemon restarts too.
// One small text file per key in a private DB directory, written whole (write, fsync, rename).
#pragma once
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "engine/ir/program.h"
#include "engine/tune/tuner.h"

namespace prism::tune {

// The key: a hash of the printed program, the bindings, the target's name and model,
// PRISM_VERSION and the tuner's revision (a newer prism may generate better kernels).
std::string tune_key(const Program& lowered, const std::map<std::string, int64_t>& bindings, const backend::TargetDescription& target);

// The text form of a result and back, ending with the SHA-256 of the lines above it;
// parse_tune_result returns nothing for text it cannot read (an older format, a truncated file),
// whose checksum does not match (edited or damaged since) or that no tune could have written
// (`best` not the fastest row that passed, at its time; a negative or non-finite time), which
// the DB treats as a miss.
std::string format_tune_result(const TuneResult& result);
std::optional<TuneResult> parse_tune_result(const std::string& text);

// A result's rows named by another search's candidate ids. Ids number one search's families; a
// search of the same program with other limits, or cut short by its budget, numbers them
// differently. Each row's family (by its canonical hash) takes its id among `families`; rows of
// families not among them are dropped. False, and `result` unchanged, when the best row's family
// is not among them: the result does not answer for this search.
bool renumber(TuneResult& result, const std::vector<Candidate>& families);

class TuneDb {
 public:
  explicit TuneDb(std::string dir = "");  // empty: kept in memory only
  void set_dir(std::string dir);
  // Hears of a DB entry that could not be read (logged once, then dropped and rebuilt) and of a
  // DB directory that cannot be used.
  void set_warn(std::function<void(const std::string&)> warn);
  const std::string& dir() const { return dir_; }
  std::optional<TuneResult> get(const std::string& key) const;
  // Throws nothing: a DB that cannot be written keeps the result in memory.
  void put(const std::string& key, const TuneResult& result);

 private:
  mutable std::mutex mutex_;
  std::string dir_;
  std::function<void(const std::string&)> warn_;
  std::map<std::string, TuneResult> memory_;
};

}  // namespace prism::tune
