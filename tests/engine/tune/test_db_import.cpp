// An imported tuning result is another machine's claim (issue 61, 3): what can be checked is
// checked at import, and a tune measures the claimed rows here before anything is served.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <thread>

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

TEST_CASE("tune DB import: sizes over a program's fixed dims are sizes, however small its bindings", "[tune][db][hosts]") {
  // As prism.model_manifest writes a layer: its hidden size fixed, only the token count bound.
  // Found when a worker host's honest entry for a decoder at n=1 (a grid of 2 over its hidden
  // size) was rejected by the caller as "no size at n=1".
  test::ScopedEnv trusting("PRISM_TUNE_NOISE_LIMIT", "off");
  const std::string text = "program fixed(X: f32[n, 256], W: f32[256, 256]) {\n  return rms_norm(X) @ W\n}\n";
  test::TempDir data, cache;
  Workspace there;
  there.set_storage(data.path(), cache.path());
  there.open("fixed.prism", text, 1);
  tune::TuneRequest request;
  request.bindings = {{"n", 1}};
  request.top = 4;
  const tune::TuneResult tuned = there.tune("fixed", request);
  REQUIRE(std::any_of(tuned.rows.begin(), tuned.rows.end(), [](const tune::TuneRow& r) {
    return std::any_of(r.sizes.begin(), r.sizes.end(), [](const auto& size) { return size.second > 1; });
  }));
  Importer here;
  const tune::DbImport done = here.ws.import_tuning_db(there.export_tuning_db().text);
  for (const std::string& p : done.problems) UNSCOPED_INFO(p);
  CHECK(done.added == 1);
  CHECK(done.rejected == 0);
  // Past the largest of its tensors (256 x 256 elements) a size is none.
  const std::string forged_size = forged(there.export_tuning_db().text, [](tune::TuneResult& r) {
    for (tune::TuneRow& row : r.rows)
      if (!row.sizes.empty()) row.sizes.begin()->second = 65537;
  });
  CHECK(Importer().ws.import_tuning_db(forged_size).rejected == 1);
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
  const double possible_ms = here.ws.claim_limits(honest.result).roofline_ms / 4 * 1.25;
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

namespace {

// The entries of a DB's export, each as it would be without the time it was imported here: what
// two DBs that merged the same claims must agree on.
std::string without_import_times(const tune::DbExport& exported) {
  std::string out;
  size_t at = 0;
  while (at < exported.text.size()) {
    const size_t end = exported.text.find("\nend\t", at);
    REQUIRE(end != std::string::npos);
    const size_t next = exported.text.find('\n', end + 1) + 1;
    std::optional<tune::TuneResult> r = tune::parse_tune_result(exported.text.substr(at, next - at));
    REQUIRE(r);
    r->measured.imported.clear();
    out += tune::format_tune_result(*r);
    at = next;
  }
  return out;
}

}  // namespace

TEST_CASE("tune DB import: another kind of machine's entry never answers here", "[tune][db][hosts]") {
  test::ScopedEnv trusting("PRISM_TUNE_NOISE_LIMIT", "off");
  Honest honest;
  REQUIRE(honest.result.best >= 0);
  // The same question measured on a machine of another kind: another CPU, the same CPU with
  // fewer cores (a worker pinned by taskset or a cgroup), or another compiler.
  const std::vector<std::string> others = {
      forged(honest.exported, [](tune::TuneResult& r) { r.target_model = "Intel Xeon Platinum 8480+, 56 cores, AVX-512"; }),
      forged(honest.exported, [](tune::TuneResult& r) { r.target_model = r.target_model.substr(0, r.target_model.find(',')) + ", 1 core, AVX-512"; }),
      forged(honest.exported, [](tune::TuneResult& r) { r.toolchain = "clang++|Debian clang version 14.0.6"; }),
  };
  Importer here;
  for (const std::string& other : others) CHECK(here.ws.import_tuning_db(other).added == 1);  // each under its own key

  CHECK_FALSE(here.ws.kernel_source("rms_linear", 0, honest.request.bindings, backend::cpu::kTarget).tuned);
  const tune::TuneResult tuned = here.ws.tune("rms_linear", honest.request);
  CHECK_FALSE(tuned.from_db);
  CHECK(tuned.measured.confirmed.empty());  // a tune of its own, not the claim's rows measured here
  CHECK(tuned.target_model == honest.result.target_model);
  // The other kinds' entries stay as they came, each still a claim no tune here asks for.
  const tune::DbExport all = here.ws.export_tuning_db();
  CHECK(all.entries == 4);
  CHECK(here.ws.import_tuning_db(all.text).present == 1);
}

TEST_CASE("tune DB import: claims of one kind merge to one entry, in any order, at once or again", "[tune][db][hosts]") {
  test::ScopedEnv trusting("PRISM_TUNE_NOISE_LIMIT", "off");
  Honest honest;
  REQUIRE(honest.result.rows.size() >= 2);
  // Three hosts of this kind answered the same question: one as measured here; one faster on
  // every row but without the slowest; one slower, with a row none of the others has.
  const std::string a = honest.exported;
  const std::string b = forged(a, [](tune::TuneResult& r) {
    for (tune::TuneRow& row : r.rows) row.measured_ms *= 0.9;
    r.rows.pop_back();
    tune::fill_ratios(r);
  });
  uint64_t extra_family = 0;
  const std::string c = forged(a, [&](tune::TuneResult& r) {
    for (tune::TuneRow& row : r.rows) row.measured_ms *= 1.2;
    tune::TuneRow extra = r.rows.back();
    extra.family = extra_family = extra.family ^ 0x5eed;
    extra.measured_ms *= 3;
    r.rows.push_back(extra);
    tune::fill_ratios(r);
  });
  const std::optional<tune::TuneResult> fastest = tune::parse_tune_result(b);
  REQUIRE(fastest);

  auto merged = [](const std::vector<std::string>& order) {
    tune::TuneDb db;
    for (const std::string& text : order) db.import_entries(text);
    return db.export_entries();
  };
  const tune::DbExport first = merged({a, b, c});
  REQUIRE(first.entries == 1);
  const std::string expected = without_import_times(first);
  std::optional<tune::TuneResult> joined = tune::parse_tune_result(first.text);
  REQUIRE(joined);
  CHECK(joined->best_ms == fastest->best_ms);  // the faster claim leads
  CHECK(joined->rows.size() == honest.result.rows.size() + 1);  // every instantiation any host claimed
  CHECK(std::any_of(joined->rows.begin(), joined->rows.end(), [&](const tune::TuneRow& r) { return r.family == extra_family; }));

  for (const auto& order : std::vector<std::vector<std::string>>{{a, c, b}, {b, a, c}, {b, c, a}, {c, a, b}, {c, b, a}, {a, b, c, c, b, a}})
    CHECK(without_import_times(merged(order)) == expected);

  // The three imported at once, from three threads, and then again: the same one entry.
  tune::TuneDb db;
  std::vector<std::thread> threads;
  for (const std::string* text : {&a, &b, &c}) threads.emplace_back([&db, text] { db.import_entries(*text); });
  for (std::thread& t : threads) t.join();
  CHECK(without_import_times(db.export_entries()) == expected);
  const tune::DbImport again = db.import_entries(first.text);
  CHECK(again.merged == 1);
  CHECK(without_import_times(db.export_entries()) == expected);

  // A faster claim from another kind of machine is kept apart: it joins nothing.
  const std::string elsewhere = forged(b, [](tune::TuneResult& r) {
    r.target_model = "Intel Xeon Platinum 8480+, 56 cores, AVX-512";
    for (tune::TuneRow& row : r.rows) row.measured_ms *= 0.5;
    tune::fill_ratios(r);
  });
  CHECK(db.import_entries(elsewhere).added == 1);
  CHECK(without_import_times(db.export_entries()).find(expected) != std::string::npos);
}
