#include "engine/search/search_store.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "engine/error.h"
#include "engine/ir/print.h"
#include "engine/sgraph/canonical.h"
#include "engine/sgraph/parse.h"
#include "engine/sgraph/validate.h"
#include "engine/util/build_id.h"
#include "engine/util/cache.h"
#include "engine/util/private_dir.h"
#include "engine/util/sealed_file.h"

namespace prism::search {

namespace {

constexpr std::string_view kHeader = "prism search 1\n";
constexpr size_t kMaxEntryBytes = size_t(64) << 20;

std::string limits_text(const SearchLimits& l) {
  std::string out = std::to_string(l.max_block_ops) + " " + std::to_string(l.max_kernels) + " " + std::to_string(l.max_accumulators) + " " +
                    std::to_string(l.library_kernels) + " " + std::to_string(l.kernel_cuts) + " " + (l.prune ? "prune" : "all") + " " +
                    std::to_string(l.fast_memory_bytes);
  for (const auto& [dim, size] : l.bindings) out += " " + dim + "=" + std::to_string(size);
  return out;
}

// A field of any bytes: "NAME LENGTH\n" then the bytes and a newline.
void put_field(std::ostringstream& out, const char* name, const std::string& bytes) { out << name << " " << bytes.size() << "\n" << bytes << "\n"; }

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}
  // The rest of the line after "NAME " (a line without it is no search).
  std::string line(const std::string& name) {
    const size_t end = text_.find('\n', at_);
    if (end == std::string_view::npos || text_.compare(at_, name.size() + 1, name + " ") != 0) throw Error(Error::Kind::Failed, "not a search");
    std::string rest(text_.substr(at_ + name.size() + 1, end - at_ - name.size() - 1));
    at_ = end + 1;
    return rest;
  }
  std::string field(const std::string& name) {
    const size_t size = std::stoull(line(name));
    if (size > text_.size() - at_ || text_.compare(at_ + size, 1, "\n") != 0) throw Error(Error::Kind::Failed, "not a search");
    std::string bytes(text_.substr(at_, size));
    at_ += size + 1;
    return bytes;
  }
  bool done() const { return at_ == text_.size(); }

 private:
  std::string_view text_;
  size_t at_ = 0;
};

// The counters and times of SearchStats, in one order for writing and reading.
template <class Stats, class F>
void each_stat(Stats& s, F&& f) {
  for (auto* n : {&s.generated, &s.pruned_expression, &s.pruned_dims, &s.pruned_structure, &s.pruned_hardware, &s.duplicates, &s.verified,
                  &s.rejected, &s.unproved, &s.families, &s.fingerprinted, &s.fingerprint_rejected})
    f(*n);
  for (auto* t : {&s.fingerprint_s, &s.saturate_s, &s.generate_s, &s.verify_s, &s.total_s}) f(*t);
}

PrivateDir open_store(const std::string& dir) {
  const auto [root, sub] = cache_root_and_sub(dir);
  return PrivateDir::open(root, sub, /*create=*/true);
}

}  // namespace

std::string search_key(const Program& lowered, const SearchLimits& limits) {
  return content_key(print_program(lowered) + "\x1d" + limits_text(limits) + "\x1d" + engine_build_id(), "prism-search:");
}

std::string format_search(const SearchResult& r) {
  std::ostringstream out;
  out << kHeader;
  std::ostringstream stats;
  stats.precision(17);
  each_stat(r.stats, [&](auto v) { stats << v << " "; });
  put_field(out, "stats", stats.str());
  put_field(out, "empty_reason", r.stats.empty_reason);
  out << "candidates " << r.candidates.size() << "\n";
  for (const Candidate& c : r.candidates) {
    out << "candidate " << c.id << " " << c.hash << "\n";
    put_field(out, "summary", c.summary);
    put_field(out, "proof", c.proof);
    put_field(out, "graph", c.text());
  }
  return out.str();
}

std::optional<SearchResult> parse_search(std::string_view text) {
  if (text.substr(0, kHeader.size()) != kHeader) return std::nullopt;
  try {
    Reader in(text.substr(kHeader.size()));
    SearchResult r;
    std::istringstream stats(in.field("stats"));
    each_stat(r.stats, [&](auto& v) {
      if (!(stats >> v)) throw Error(Error::Kind::Failed, "not a search");
    });
    r.stats.empty_reason = in.field("empty_reason");
    r.stats.stop_reason = SearchStop::Complete;
    const size_t count = std::stoull(in.line("candidates"));
    for (size_t i = 0; i < count; ++i) {
      Candidate c;
      std::istringstream head(in.line("candidate"));
      if (!(head >> c.id >> c.hash) || c.id != int(i) + 1) return std::nullopt;
      c.summary = in.field("summary");
      c.proof = in.field("proof");
      auto graph = std::make_shared<const sgraph::SGraph>(sgraph::canonicalize(sgraph::parse(in.field("graph"))));
      // What the search proved is the family of this hash: anything else is not its answer.
      if (sgraph::canonical_hash(*graph) != c.hash || !sgraph::validate(*graph).empty()) return std::nullopt;
      c.kernels = sgraph::kernels_run(*graph);
      c.parameters = graph->parameters();
      c.graph = std::move(graph);
      r.candidates.push_back(std::move(c));
    }
    if (!in.done()) return std::nullopt;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

std::string build_dir_name() { return engine_build_id().substr(0, 16); }

}  // namespace

std::string SearchStore::build_dir(const std::string& dir) { return dir + "/" + build_dir_name(); }

int SearchStore::prune_other_builds(const std::string& dir, int days) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(24 * days);
  int removed = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_directory(ec) || e.is_symlink(ec) || e.path().filename() == build_dir_name()) continue;
    if (e.last_write_time(ec) < cutoff && !ec && fs::remove_all(e.path(), ec) > 0) ++removed;
  }
  return removed;
}

std::optional<SearchResult> SearchStore::get(const std::string& key) const {
  if (dir_.empty()) return std::nullopt;
  const PrivateDir dir = open_store(dir_);
  if (!dir.ok()) return std::nullopt;
  FileContents file = read_sealed_file(dir, key + ".search", kMaxEntryBytes);
  if (!file.bytes) return std::nullopt;
  std::optional<SearchResult> r = parse_search(*file.bytes);
  if (!r) remove_sealed_file(dir, key + ".search");  // of an older format, or damaged: searched again
  else r->stats.from_store = true;
  return r;
}

void SearchStore::put(const std::string& key, const SearchResult& result) const {
  if (dir_.empty() || result.stats.stop_reason != SearchStop::Complete || result.stats.from_store) return;
  const PrivateDir dir = open_store(dir_);
  if (!dir.ok()) return;
  const std::string text = format_search(result);
  if (write_seal(dir, key + ".search", text).empty()) dir.write(key + ".search", text);
}

}  // namespace prism::search
