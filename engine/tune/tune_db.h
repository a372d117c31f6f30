// The tuning DB (docs/design.md §5): tuning results on disk, keyed by (program, bindings, target,
// prism version), so the same question is never tuned twice, across daemon restarts too.
// One small text file per key in a private DB directory, written whole (write, fsync, rename).
#pragma once
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "engine/ir/program.h"
#include "engine/tune/tuner.h"

namespace prism::tune {

// The key: a hash of the printed program, the bindings, the target's name, model and toolchain,
// PRISM_VERSION and the tuner's revision (a newer prism may generate better kernels).
std::string tune_key(const Program& lowered, const std::map<std::string, int64_t>& bindings, const backend::TargetDescription& target);
// The key of the question a result answers, from its own fields: tune_key of the tune that wrote
// it. What an imported entry is filed under, so it never answers another question.
std::string entry_key(const TuneResult& result);

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

// A DB exported (TuneDb::export_entries): its entries, one after another, and how many.
struct DbExport {
  std::string text;
  int entries = 0;
};

// What importing entries did (TuneDb::import_entries).
struct DbImport {
  int added = 0;     // entries the DB lacked
  int present = 0;   // entries it held already, measured here: left as they were
  int merged = 0;    // entries another import had claimed too: their rows joined, to be measured here
  int rejected = 0;  // unreadable, damaged since they were written, not a result prism writes, or
                     // a claim this machine refutes (`problems` says why)
  std::vector<std::string> problems;  // why each refuted claim was (at most a few, the rest counted)
};

// Why an imported result cannot be true here, or "" (TuneDb::import_entries' `refute`).
using ImportCheck = std::function<std::string(const TuneResult&)>;

// What this machine knows of an imported result's question before any search (0: not known).
struct ClaimLimits {
  double roofline_ms = 0;   // this machine's roofline for the program at its bindings
  double largest_size = 0;  // the most elements of any of the program's tensors at them
};

// What can be checked of an imported result without its program's search: every size is a
// positive number no larger than `limits.largest_size` (no grid splits, and no loop runs over,
// more than a tensor's elements), and no row claims a time below a quarter of the roofline. ""
// when it holds.
std::string implausible_claim(const TuneResult& result, const ClaimLimits& limits);

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

  // Sharing a DB (docs/tuning.md, "Sharing a tuning DB"): every readable entry, on disk and in
  // memory, one after another in its own text form, ordered by key; with `keep`, those it keeps.
  DbExport export_entries(const std::function<bool(const TuneResult&)>& keep = {}) const;
  // Each entry of `text` (export_entries' form), filed under entry_key as another machine's claim
  // (Measured::imported): never served as this machine's answer until a tune has measured its
  // rows here. An entry `refute` finds a reason against is rejected; one whose key holds a result
  // measured here is left out (present); one whose key holds another unconfirmed claim has its
  // rows joined to it, so that no claim can keep another from being measured (docs/tuning.md,
  // "Sharing a tuning DB").
  DbImport import_entries(std::string_view text, const ImportCheck& refute = {});

 private:
  std::optional<TuneResult> get_locked(const std::string& key) const;
  void put_locked(const std::string& key, const TuneResult& result);

  mutable std::mutex mutex_;
  std::string dir_;
  std::function<void(const std::string&)> warn_;
  std::map<std::string, TuneResult> memory_;
};

}  // namespace prism::tune
