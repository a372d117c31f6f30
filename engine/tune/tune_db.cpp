#include "engine/tune/tune_db.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>

#include "engine/ir/print.h"
#include "engine/tune/backends.h"
#include "engine/tune/tuner_steps.h"
#include "engine/util/cache.h"
#include "engine/util/private_files.h"
#include "engine/util/sha256.h"

namespace prism::tune {

namespace fs = std::filesystem;

namespace {

constexpr const char* kHeader = "prism-tune 4";
// An entry holds a few dozen rows; a file far larger than this is not one.
constexpr size_t kMaxEntryBytes = size_t(4) << 20;

// Free text on one line: tabs and newlines become spaces (they separate fields and records).
std::string clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

// Text that must come back exactly (the program a key hashes), on one line: backslash, tab and
// newline escaped.
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string unescaped(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 't' ? '\t' : c == 'n' ? '\n' : c;
  }
  return out;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string sizes_field(const std::map<std::string, int64_t>& sizes) {
  std::string s;
  for (const auto& [k, v] : sizes) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return s;
}

std::map<std::string, int64_t> parse_sizes(const std::string& text) {
  std::map<std::string, int64_t> sizes;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    auto eq = item.find('=');
    if (eq == std::string::npos) throw std::runtime_error("bad sizes");
    sizes[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
  }
  return sizes;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

}  // namespace

namespace {

std::string key_of(const std::string& lowered, const std::map<std::string, int64_t>& bindings, backend::Target target, const std::string& model,
                   const std::string& toolchain, const std::string& prism_version, int revision) {
  const std::string text = lowered + "\x1f" + sizes_field(bindings) + "\x1f" + tune::target_name(target) + "\x1f" + model + "\x1f" + toolchain +
                           "\x1f" + prism_version + "\x1f" + std::to_string(revision);
  return content_key(text, "tune:");
}

}  // namespace

std::string tune_key(const Program& lowered, const std::map<std::string, int64_t>& bindings, const backend::TargetDescription& target) {
  return key_of(print_program(lowered), bindings, target.target, target.model, target.toolchain, PRISM_VERSION, kTunerRevision);
}

std::string entry_key(const TuneResult& r) {
  return key_of(r.lowered, r.bindings, r.target, r.target_model, r.toolchain, r.prism_version, r.measured.tuner_revision);
}

std::string format_tune_result(const TuneResult& r) {
  std::ostringstream out;
  out << kHeader << "\n";
  out << "program\t" << clean(r.program) << "\n";
  out << "version\t" << r.version << "\n";
  out << "target\t" << tune::target_name(r.target) << "\t" << clean(r.target_model) << "\n";
  out << "prism\t" << escaped(r.prism_version) << "\t" << escaped(r.toolchain) << "\n";
  out << "lowered\t" << escaped(r.lowered) << "\n";
  out << "bindings\t" << sizes_field(r.bindings) << "\n";
  out << "top\t" << r.top << "\t" << r.threads << "\n";
  out << "machine\t" << number(r.bandwidth_gbs) << "\t" << number(r.peak_gflops) << "\n";
  out << "baseline\t" << number(r.baseline_ms) << "\t" << clean(r.baseline_error) << "\t" << clean(r.baseline_note) << "\n";
  out << "inputs\t" << number(r.input_range) << "\t" << clean(r.input_note) << "\n";
  for (const std::string& set : r.edge_sets) out << "edge\t" << clean(set) << "\n";
  for (const std::string& note : r.edge_notes) out << "edge-note\t" << clean(note) << "\n";
  out << "roofline\t" << number(r.roofline_ms) << "\t" << clean(r.roofline_bound) << "\t" << number(r.roofline_drawn_ms) << "\n";
  out << "best\t" << r.best << "\t" << number(r.best_ms) << "\t" << number(r.speedup) << "\t" << number(r.roofline_fraction) << "\n";
  out << "correlation\t" << number(r.rank_correlation) << "\n";
  out << "stats\t" << r.stats.instantiations << "\t" << r.stats.compiled << "\t" << r.stats.cached << "\t"
      << number(r.stats.compile_s) << "\t" << number(r.stats.run_s) << "\t" << number(r.stats.total_s) << "\n";
  const Measured& m = r.measured;
  out << "measured\t" << clean(m.at) << "\t" << m.rounds << "\t" << m.attempts << "\t" << number(m.foreign_cores) << "\t"
      << number(m.steal) << "\t" << number(m.baseline_spread) << "\t" << number(m.ratio_spread) << "\t" << (m.noisy ? 1 : 0) << "\t"
      << (m.queued ? 1 : 0) << "\t" << m.tuner_revision << "\t" << m.seed << "\t" << clean(m.search) << "\t" << clean(m.contention)
      << "\t" << clean(m.remeasured) << "\n";
  if (!m.imported.empty()) out << "imported\t" << clean(m.imported) << "\n";
  if (!m.confirmed.empty()) out << "confirmed\t" << clean(m.confirmed) << "\n";
  for (const auto& row : r.rows)
    out << "row\t" << row.candidate << "\t" << sizes_field(row.sizes) << "\t" << row.cost_rank << "\t" << number(row.predicted_ms)
        << "\t" << number(row.measured_ms) << "\t" << number(row.max_error) << "\t" << (row.ok ? 1 : 0) << "\t"
        << clean(row.summary) << "\t" << clean(row.error) << "\t" << number(row.spread) << "\t" << (row.noisy ? 1 : 0) << "\t"
        << row.family << "\t" << sizes_field(row.schedule) << "\n";
  // The checksum of everything above: an entry edited or damaged after it was written is a miss.
  const std::string body = out.str();
  return body + "end\t" + sha256_hex(body) + "\n";
}

namespace {

bool measure_like(double v) { return std::isfinite(v) && v >= 0; }

// What a result prism wrote always holds (docs/tuning.md, "Report and DB"): `best` names the
// fastest row that passed, at its own time; times and ratios are finite and not negative.
bool consistent(const TuneResult& r) {
  for (double v : {r.baseline_ms, r.best_ms, r.speedup, r.roofline_ms, r.roofline_drawn_ms, r.roofline_fraction, r.bandwidth_gbs, r.peak_gflops})
    if (!measure_like(v)) return false;
  for (const TuneRow& row : r.rows)
    if (!measure_like(row.measured_ms) || !measure_like(row.predicted_ms) || !measure_like(row.spread) || (row.ok && row.measured_ms <= 0))
      return false;
  if (r.best == -1) return r.best_ms == 0;
  if (r.best < 0 || size_t(r.best) >= r.rows.size()) return false;
  const TuneRow& best = r.rows[size_t(r.best)];
  if (!best.ok || best.measured_ms != r.best_ms) return false;
  for (const TuneRow& row : r.rows)
    if (row.ok && row.measured_ms < best.measured_ms) return false;
  return true;
}

}  // namespace

std::optional<TuneResult> parse_tune_result(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kHeader) return std::nullopt;
  TuneResult r;
  bool ended = false;
  try {
    for (std::streamoff at = in.tellg(); std::getline(in, line); at = in.tellg()) {
      auto f = split_tabs(line);
      const std::string& tag = f[0];
      auto need = [&](size_t n) {
        if (f.size() < n) throw std::runtime_error("short record");
      };
      if (tag == "end") {
        need(2);
        ended = f[1] == sha256_hex(std::string_view(text).substr(0, size_t(at)));
        break;
      } else if (tag == "program") {
        need(2), r.program = f[1];
      } else if (tag == "version") {
        need(2), r.version = std::stoll(f[1]);
      } else if (tag == "target") {
        need(3), r.target_model = f[2];
        std::optional<backend::Target> target = tune::parse_target(f[1]);
        if (!target) throw std::runtime_error("unknown target");
        r.target = *target;
      } else if (tag == "prism") {
        need(3), r.prism_version = unescaped(f[1]), r.toolchain = unescaped(f[2]);
      } else if (tag == "lowered") {
        need(2), r.lowered = unescaped(f[1]);
      } else if (tag == "bindings") {
        need(2), r.bindings = parse_sizes(f[1]);
      } else if (tag == "top") {
        need(3), r.top = std::stoi(f[1]), r.threads = std::stoi(f[2]);
      } else if (tag == "machine") {
        need(3), r.bandwidth_gbs = std::stod(f[1]), r.peak_gflops = std::stod(f[2]);
      } else if (tag == "baseline") {
        need(3), r.baseline_ms = std::stod(f[1]), r.baseline_error = f[2];
        if (f.size() > 3) r.baseline_note = f[3];  // entries from before issue 18 have none
      } else if (tag == "inputs") {
        need(3), r.input_range = std::stod(f[1]), r.input_note = f[2];
      } else if (tag == "edge") {
        need(2), r.edge_sets.push_back(f[1]);
      } else if (tag == "edge-note") {
        need(2), r.edge_notes.push_back(f[1]);
      } else if (tag == "roofline") {
        need(3), r.roofline_ms = std::stod(f[1]), r.roofline_bound = f[2];
        if (f.size() > 3) r.roofline_drawn_ms = std::stod(f[3]);  // entries from before kTunerRevision 40 have none
      } else if (tag == "best") {
        need(5), r.best = std::stoi(f[1]), r.best_ms = std::stod(f[2]), r.speedup = std::stod(f[3]), r.roofline_fraction = std::stod(f[4]);
      } else if (tag == "correlation") {
        need(2), r.rank_correlation = std::stod(f[1]);
      } else if (tag == "stats") {
        need(7);
        r.stats.instantiations = std::stoull(f[1]), r.stats.compiled = std::stoull(f[2]), r.stats.cached = std::stoull(f[3]);
        r.stats.compile_s = std::stod(f[4]), r.stats.run_s = std::stod(f[5]), r.stats.total_s = std::stod(f[6]);
      } else if (tag == "measured") {
        need(15);
        Measured& m = r.measured;
        m.at = f[1], m.rounds = std::stoi(f[2]), m.attempts = std::stoi(f[3]);
        m.foreign_cores = std::stod(f[4]), m.steal = std::stod(f[5]), m.baseline_spread = std::stod(f[6]), m.ratio_spread = std::stod(f[7]);
        m.noisy = f[8] == "1", m.queued = f[9] == "1", m.tuner_revision = std::stoi(f[10]), m.seed = std::stoull(f[11]);
        m.search = f[12], m.contention = f[13], m.remeasured = f[14];
      } else if (tag == "imported") {
        need(2), r.measured.imported = f[1];
      } else if (tag == "confirmed") {
        need(2), r.measured.confirmed = f[1];
      } else if (tag == "row") {
        need(13);
        TuneRow row;
        row.candidate = std::stoi(f[1]);
        row.sizes = parse_sizes(f[2]);
        row.cost_rank = std::stoi(f[3]);
        row.predicted_ms = std::stod(f[4]);
        row.measured_ms = std::stod(f[5]);
        row.max_error = std::stod(f[6]);
        row.ok = f[7] == "1";
        row.summary = f[8];
        row.error = f[9];
        row.spread = std::stod(f[10]);
        row.noisy = f[11] == "1";
        row.family = std::stoull(f[12]);
        if (f.size() > 13) row.schedule = parse_sizes(f[13]);  // entries before schedules have none
        r.rows.push_back(std::move(row));
      }
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!ended || !consistent(r)) return std::nullopt;
  fill_ratios(r);  // the rows' ratios are their times'
  return r;
}

bool renumber(TuneResult& result, const std::vector<Candidate>& families) {
  std::map<uint64_t, int> id_of;
  for (const Candidate& c : families) id_of.emplace(c.hash, c.id);
  if (result.best >= 0 && !id_of.count(result.rows[size_t(result.best)].family)) return false;
  std::vector<TuneRow> rows;
  int best = -1;
  for (size_t i = 0; i < result.rows.size(); ++i) {
    auto it = id_of.find(result.rows[i].family);
    if (it == id_of.end()) continue;
    if (int(i) == result.best) best = int(rows.size());
    rows.push_back(result.rows[i]);
    rows.back().candidate = it->second;
  }
  result.rows = std::move(rows);
  result.best = best;
  return true;
}

TuneDb::TuneDb(std::string dir) : dir_(std::move(dir)) {}

void TuneDb::set_dir(std::string dir) {
  std::lock_guard lock(mutex_);
  dir_ = std::move(dir);
}

void TuneDb::set_warn(std::function<void(const std::string&)> warn) {
  std::lock_guard lock(mutex_);
  warn_ = std::move(warn);
}

std::optional<TuneResult> TuneDb::get(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return get_locked(key);
}

std::optional<TuneResult> TuneDb::get_locked(const std::string& key) const {
  if (auto it = memory_.find(key); it != memory_.end()) return it->second;
  if (dir_.empty()) return std::nullopt;
  const std::string file = (fs::path(dir_) / (key + ".tune")).string();
  FileContents text = read_regular_file(file, kMaxEntryBytes);
  if (!text.bytes) return std::nullopt;  // not there: a miss
  std::optional<TuneResult> result = parse_tune_result(*text.bytes);
  if (!result) {
    // Truncated, damaged or of an older format: said once, dropped, and tuned again.
    if (warn_) warn_("dropping the unreadable tuning DB entry " + file);
    ::unlink(file.c_str());
  }
  return result;
}

void TuneDb::put(const std::string& key, const TuneResult& result) {
  std::lock_guard lock(mutex_);
  put_locked(key, result);
}

void TuneDb::put_locked(const std::string& key, const TuneResult& result) {
  memory_[key] = result;
  if (dir_.empty()) return;
  if (std::string problem = ensure_private_dir(dir_); !problem.empty()) {
    if (warn_) warn_("the tuning DB keeps results in memory only: " + problem);
    return;
  }
  std::string file = (fs::path(dir_) / (key + ".tune")).string();
  if (std::string problem = write_file_atomically(file, format_tune_result(result)); !problem.empty() && warn_)
    warn_("cannot store a tuning result: " + problem);
}

DbExport TuneDb::export_entries(const std::function<bool(const TuneResult&)>& keep) const {
  std::lock_guard lock(mutex_);
  std::set<std::string> keys;
  for (const auto& [key, result] : memory_) keys.insert(key);
  std::error_code ec;
  if (!dir_.empty())
    for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec))
      if (e.path().extension() == ".tune") keys.insert(e.path().stem().string());
  DbExport out;
  for (const std::string& key : keys)
    if (std::optional<TuneResult> r = get_locked(key); r && (!keep || keep(*r))) {
      out.text += format_tune_result(*r);
      ++out.entries;
    }
  return out;
}

std::string implausible_claim(const TuneResult& r, const ClaimLimits& limits) {
  for (const TuneRow& row : r.rows) {
    for (const auto& [name, value] : row.sizes)
      if (value < 1 || (limits.largest_size > 0 && double(value) > limits.largest_size))
        return "candidate " + std::to_string(row.candidate) + " claims " + name + "=" + std::to_string(value) + ", no size at " + sizes_field(r.bindings);
    if (row.ok && limits.roofline_ms > 0 && row.measured_ms < limits.roofline_ms / 4)
      return "candidate " + std::to_string(row.candidate) + " claims " + number(row.measured_ms) + " ms, under a quarter of this machine's roofline (" +
             number(limits.roofline_ms) + " ms)";
  }
  return "";
}

namespace {

// The same instantiation: family, sizes and schedule.
bool same_instantiation(const TuneRow& a, const TuneRow& b) { return a.family == b.family && a.sizes == b.sizes && a.schedule == b.schedule; }

// What orders the rows of one claim: those that passed first, faster first; the rest of the order
// (then by instantiation) only makes a join's outcome the same whichever claim came first.
auto row_order(const TuneRow& r) {
  return std::tie(r.measured_ms, r.spread, r.max_error, r.cost_rank, r.error, r.family, r.sizes, r.schedule, r.candidate, r.predicted_ms,
                  r.summary, r.noisy, r.transient);
}
bool row_before(const TuneRow& a, const TuneRow& b) {
  if (a.ok != b.ok) return a.ok;
  return row_order(a) < row_order(b);
}

// A claim as the DB keeps it: its rows in row_before's order, `best` the first.
void in_claim_order(TuneResult& claim) {
  std::sort(claim.rows.begin(), claim.rows.end(), row_before);
  claim.best = !claim.rows.empty() && claim.rows.front().ok ? 0 : -1;
  fill_ratios(claim);
}

// Which of two claims on one question leads their join: the faster best; at the same time, the
// one whose text sorts first (the DB's own import time left out), so that no order of imports
// decides it.
bool leads(const TuneResult& a, const TuneResult& b) {
  const double inf = std::numeric_limits<double>::infinity();
  const double ta = a.best >= 0 ? a.best_ms : inf, tb = b.best >= 0 ? b.best_ms : inf;
  if (ta != tb) return ta < tb;
  TuneResult x = a, y = b;
  x.measured.imported.clear();
  y.measured.imported.clear();
  return format_tune_result(x) < format_tune_result(y);
}

// Two claims on one question (one key: the same kind of machine) as one: the faster one's fields
// and every row of both, an instantiation claimed by both at its better claim; `best` the fastest.
// Commutative, associative and idempotent, so that any number of exports merged in any order, at
// once or again, leave the same entry (docs/tuning.md, "Sharing a tuning DB"). Its import time is
// the first.
void join_claims(TuneResult& held, TuneResult claim) {
  const std::string first_import = std::min(held.measured.imported, claim.measured.imported);
  if (leads(claim, held)) std::swap(held, claim);
  for (const TuneRow& row : claim.rows) {
    auto same = std::find_if(held.rows.begin(), held.rows.end(), [&](const TuneRow& r) { return same_instantiation(r, row); });
    if (same == held.rows.end())
      held.rows.push_back(row);
    else if (row_before(row, *same))
      *same = row;
  }
  in_claim_order(held);
  held.measured.imported = first_import;
}

}  // namespace

DbImport TuneDb::import_entries(std::string_view text, const ImportCheck& refute) {
  const std::string now = steps::utc_now();
  DbImport done;
  // An entry runs from its header line to its end line; anything else between entries is damage.
  // Each is parsed and checked (`refute` may compile its program and describe this machine)
  // before the DB's lock is taken: a tune's DB lookups never wait on that.
  size_t at = 0;
  while (at < text.size()) {
    const size_t start = text.find(kHeader, at);
    if (start == std::string_view::npos) {
      done.rejected += text.find_first_not_of(" \n", at) != std::string_view::npos;
      break;
    }
    done.rejected += text.substr(at, start - at).find_first_not_of(" \n") != std::string_view::npos;
    size_t end = text.size();
    if (const size_t end_line = text.find("\nend\t", start); end_line != std::string_view::npos)
      if (const size_t newline = text.find('\n', end_line + 1); newline != std::string_view::npos) end = newline + 1;
    std::optional<TuneResult> r = parse_tune_result(std::string(text.substr(start, end - start)));
    at = end;
    if (!r || r->lowered.empty()) {
      ++done.rejected;
      continue;
    }
    if (std::string why = refute ? refute(*r) : ""; !why.empty()) {
      ++done.rejected;
      if (done.problems.size() < 8) done.problems.push_back(r->program + " at " + sizes_field(r->bindings) + ": " + why);
      continue;
    }
    r->measured.imported = now;  // whatever the entry says: here it is another machine's claim
    r->measured.confirmed.clear();
    in_claim_order(*r);
    const std::string key = entry_key(*r);
    std::lock_guard lock(mutex_);
    std::optional<TuneResult> held = get_locked(key);
    if (held && held->measured.imported.empty()) {
      ++done.present;
      continue;
    }
    if (held) {
      join_claims(*held, std::move(*r));
      put_locked(key, *held);
      ++done.merged;
      continue;
    }
    put_locked(key, *r);
    ++done.added;
  }
  return done;
}

}  // namespace prism::tune
