// An imported tuning result is another machine's claim (issue 61, 3): what can be checked is
// checked at import, and a tune measures the claimed rows here before anything is served.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/tune/tune_db.h"
#include "engine/workspace/workspace.h"
#include "support/scoped_env.h"
#include "support/subprocess.h"

using namespace prism;

namespace {

// A result as an honest machine of this kind wrote it: rms_linear tuned at n=16 d=256 (above the
// CPU's grain, so that its best rows split a grid).
struct Honest {
  test::TempDir data, cache;
  tune::TuneRequest request;
  tune::TuneResult result;
  std::string exported;

  Honest() {
    request.bindings = {{"n", 16}, {"d", 256}};
    request.top = 4;
    Workspace ws;
    ws.set_storage(data.path(), cache.path());
    ws.open("a.prism", test::read_example("rms_linear"), 1);
    result = ws.tune("rms_linear", request);
    exported = ws.export_tuning_db("rms_linear", request.bindings).text;
  }
};

// The one entry of `text`, edited by `edit` and sealed again: what anyone can forge.
std::string forged(const std::string& text, const std::function<void(tune::TuneResult&)>& edit) {
  std::optional<tune::TuneResult> r = tune::parse_tune_result(text);
  REQUIRE(r);
  edit(*r);
  return tune::format_tune_result(*r);
}

// A workspace on fresh storage with rms_linear open: the machine that imports.
struct Importer {
  test::TempDir data, cache;
  Workspace ws;
  Importer() {
    ws.set_storage(data.path(), cache.path());
    ws.open("a.prism", test::read_example("rms_linear"), 1);
  }
};

// A row of `r` that splits a grid, and the grid size's name: what a forger edits.
std::pair<tune::TuneRow*, std::string> row_with_grid(tune::TuneResult& r) {
  for (tune::TuneRow& row : r.rows)
    for (const auto& [name, size] : row.sizes)
      if (row.ok && name[0] == 'g' && size > 1) return {&row, name};
  FAIL("no row splits a grid");
  return {nullptr, ""};
}

}  // namespace

TEST_CASE("tune DB import: claims that cannot be true here are rejected with the reason", "[tune][db][security]") {
  test::ScopedEnv trusting("PRISM_TUNE_NOISE_LIMIT", "off");
  Honest honest;
  REQUIRE(honest.result.best >= 0);
  REQUIRE_FALSE(honest.exported.empty());

  SECTION("a time far below this machine's roofline") {
    Importer here;
    const std::string text = forged(honest.exported, [](tune::TuneResult& r) {
      r.rows[size_t(r.best)].measured_ms = 1e-6;
      tune::fill_ratios(r);
    });
    const tune::DbImport done = here.ws.import_tuning_db(text);
    CHECK(done.added == 0);
    CHECK(done.rejected == 1);
    REQUIRE(done.problems.size() == 1);
    CHECK_THAT(done.problems[0], Catch::Contains("under a quarter of this machine's roofline"));
  }
  SECTION("sizes that are no size at these bindings") {
    for (int64_t bad : {int64_t(0), int64_t(2147483647)}) {
      Importer here;
      const std::string text = forged(honest.exported, [&](tune::TuneResult& r) {
        auto [row, grid] = row_with_grid(r);
        row->sizes[grid] = bad;
      });
      const tune::DbImport done = here.ws.import_tuning_db(text);
      CHECK(done.rejected == 1);
      REQUIRE(done.problems.size() == 1);
      CHECK_THAT(done.problems[0], Catch::Contains("no size at d=256,n=16"));
    }
  }
}

TEST_CASE("tune DB import: a claim is measured here before it is served, and cannot keep another from being measured", "[tune][db][security]") {
  test::ScopedEnv trusting("PRISM_TUNE_NOISE_LIMIT", "off");
  Honest honest;
  REQUIRE(honest.result.best >= 0);
  const tune::TuneRow& best = honest.result.rows[size_t(honest.result.best)];

  // A claim that looks possible (twice as fast as measured, but no faster than a little over a
  // quarter of the roofline, which the import refuses; a size that does not divide) is accepted
  // at import, then measured: its invalid row is dropped, and what is served is this machine's
  // own time.
  Importer here;
  const double possible_ms = here.ws.claimed_roofline_ms(honest.result) / 4 * 1.25;
  auto faster = [&](double ms) { return std::max(ms / 2, possible_ms); };
  std::string invalid_size;
  const std::string claim = forged(honest.exported, [&](tune::TuneResult& r) {
    for (tune::TuneRow& row : r.rows) row.measured_ms = faster(row.measured_ms);
    auto [row, grid] = row_with_grid(r);
    tune::TuneRow odd = *row;
    odd.sizes[grid] = 3;  // 3 divides neither n=16 nor d=256
    invalid_size = grid;
    odd.measured_ms = faster(r.rows[size_t(r.best)].measured_ms);
    r.rows.insert(r.rows.begin(), odd);
    r.best = 0;
    tune::fill_ratios(r);
  });
  tune::DbImport done = here.ws.import_tuning_db(claim);
  for (const std::string& p : done.problems) UNSCOPED_INFO(p);
  REQUIRE(done.added == 1);

  // `code` before any tune: the claim is no answer, so its impossible sizes never reach it.
  tune::KernelSource untuned = here.ws.kernel_source("rms_linear", 0, honest.request.bindings, backend::cpu::kTarget);
  CHECK_FALSE(untuned.tuned);

  // The same question from an honest machine: joined to the claim, not kept out by it.
  done = here.ws.import_tuning_db(honest.exported);
  CHECK(done.merged == 1);

  tune::TuneResult measured = here.ws.tune("rms_linear", honest.request);
  CHECK_FALSE(measured.from_db);
  CHECK_FALSE(measured.measured.confirmed.empty());
  CHECK(measured.stats.compiled + measured.stats.cached > 0);  // built and run here
  for (const tune::TuneRow& row : measured.rows) {
    INFO(tune::sizes_text(row.sizes));
    const auto size = row.sizes.find(invalid_size);
    CHECK((size == row.sizes.end() || size->second != 3));  // the size that does not divide was never built
  }
  REQUIRE(measured.best >= 0);
  CHECK(measured.rows.size() <= honest.result.rows.size());  // the claimed rows, not a new top K
  CHECK(std::any_of(measured.rows.begin(), measured.rows.end(), [&](const tune::TuneRow& r) { return r.family == best.family && r.sizes == best.sizes; }));
  CHECK(measured.best_ms != faster(honest.result.best_ms));  // the claimed time is not what is served

  // Measured here: the next tune is answered by the DB, and `code` gives the measured best.
  tune::TuneResult again = here.ws.tune("rms_linear", honest.request);
  CHECK(again.from_db);
  CHECK(again.best_ms == measured.best_ms);
  CHECK(here.ws.kernel_source("rms_linear", 0, honest.request.bindings, backend::cpu::kTarget).tuned);

  // An import of the question now measured here changes nothing.
  done = here.ws.import_tuning_db(claim);
  CHECK(done.present == 1);
  CHECK(here.ws.tune("rms_linear", honest.request).best_ms == measured.best_ms);
}
