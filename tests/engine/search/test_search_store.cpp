// The search store (engine/search/search_store.h): a complete search read back is the search that
// was made, family by family; text that is not one is no answer; a second workspace on the same
// storage answers the same question without searching, and only that question.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>

#include "engine/search/search_store.h"
#include "engine/sgraph/print.h"
#include "engine/workspace/workspace.h"
#include "search_helpers.h"
#include "support/subprocess.h"

using namespace prism;

namespace {

void check_same(const SearchResult& back, const SearchResult& made) {
  REQUIRE(back.candidates.size() == made.candidates.size());
  for (size_t i = 0; i < made.candidates.size(); ++i) {
    const Candidate &a = back.candidates[i], &b = made.candidates[i];
    CHECK(a.id == b.id);
    CHECK(a.hash == b.hash);
    CHECK(a.kernels == b.kernels);
    CHECK(a.parameters == b.parameters);
    CHECK(a.summary == b.summary);
    CHECK(a.proof == b.proof);
    CHECK(a.text() == b.text());
  }
  CHECK(back.stats.verified == made.stats.verified);
  CHECK(back.stats.empty_reason == made.stats.empty_reason);
}

// `text` with its first occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("search store: a search reads back family by family, kernel cuts and library kernels too", "[search][store]") {
  for (const char* name : {"rms_linear", "gated_mlp", "attention"}) {
    INFO(name);
    const SearchResult made = search::search_program(test::lowered_example(name), SearchLimits{});
    REQUIRE(made.stats.stop_reason == SearchStop::Complete);
    REQUIRE_FALSE(made.candidates.empty());
    const std::optional<SearchResult> back = search::parse_search(search::format_search(made));
    REQUIRE(back);
    check_same(*back, made);
  }
}

TEST_CASE("search store: text that is not a stored search, or whose families differ, is no answer", "[search][store]") {
  const SearchResult made = search::search_program(test::lowered_example("rms_linear"), SearchLimits{});
  REQUIRE(made.candidates.size() >= 2);
  const std::string text = search::format_search(made);
  REQUIRE(search::parse_search(text));
  CHECK_FALSE(search::parse_search(""));
  CHECK_FALSE(search::parse_search(replaced(text, "prism search 1", "prism search 0")));
  CHECK_FALSE(search::parse_search(text.substr(0, text.size() / 2)));
  CHECK_FALSE(search::parse_search(text + "candidate 9 9\n"));
  // Another family under the first's hash: the stored hash is what the search proved.
  const Candidate& first = made.candidates[0];
  CHECK_FALSE(search::parse_search(replaced(text, "candidate 1 " + std::to_string(first.hash), "candidate 1 " + std::to_string(first.hash + 1))));
  // Ids out of order.
  CHECK_FALSE(search::parse_search(replaced(text, "candidate 1 ", "candidate 2 ")));
}

TEST_CASE("search store: a second workspace answers the same question without searching, and only it", "[search][store][workspace]") {
  test::TempDir data, cache;
  const std::string text = test::read_example("rms_linear");
  Workspace first;
  first.set_storage(data.path(), cache.path());
  first.open("a.prism", text, 1);
  const SearchResult made = first.search("rms_linear", SearchLimits{});
  CHECK_FALSE(made.stats.from_store);

  Workspace second;
  second.set_storage(data.path(), cache.path());
  second.open("b.prism", text, 1);
  const SearchResult answered = second.search("rms_linear", SearchLimits{});
  CHECK(answered.stats.from_store);
  CHECK(answered.stats.stop_reason == SearchStop::Complete);
  check_same(answered, made);

  // Other limits ask another question; a search cut short by its budget is not kept.
  SearchLimits fewer;
  fewer.max_kernels = 1;
  CHECK_FALSE(second.search("rms_linear", fewer).stats.from_store);
  SearchLimits cut;
  cut.max_block_ops = 7;
  cut.budget_s = 0;
  const SearchResult short_one = second.search("rms_linear", cut);
  CHECK(short_one.stats.stop_reason == SearchStop::Budget);
  Workspace third;
  third.set_storage(data.path(), cache.path());
  third.open("c.prism", text, 1);
  CHECK_FALSE(third.search("rms_linear", cut).stats.from_store);

  // Without storage (memory only) nothing is kept.
  Workspace bare;
  bare.open("d.prism", text, 1);
  CHECK_FALSE(bare.search("rms_linear", SearchLimits{}).stats.from_store);
}

TEST_CASE("search store: other builds' stores are removed once a week has passed without a write", "[search][store]") {
  namespace fs = std::filesystem;
  test::TempDir dir;
  const std::string mine = search::SearchStore::build_dir(dir.path());
  const auto week_ago = fs::file_time_type::clock::now() - std::chrono::hours(24 * 8);
  for (const std::string& d : {mine, dir / "old-build", dir / "recent-build"}) fs::create_directories(d);
  fs::last_write_time(mine, week_ago);
  fs::last_write_time(dir / "old-build", week_ago);
  CHECK(search::SearchStore::prune_other_builds(dir.path()) == 1);
  CHECK(fs::exists(mine));  // this build's, however old
  CHECK_FALSE(fs::exists(dir / "old-build"));
  CHECK(fs::exists(dir / "recent-build"));
  CHECK(search::SearchStore::prune_other_builds(dir / "missing") == 0);
}
