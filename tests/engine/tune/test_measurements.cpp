// Measurements kept in the repository (engine/tune/measurements.h): the CSV they are written as,
// a tune's rows as measurements and back, the cost model's regret over them, and the regret over
// every GPU measurement stored under bench/gpu/ (issue 48's target: under 1.10 on 80% of shapes).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/backend/cuda/describe.h"
#include "engine/backend/cuda/gpu_features.h"
#include "engine/error.h"
#include "engine/search/search.h"
#include "engine/sgraph/parse.h"
#include "engine/tune/backends.h"
#include "engine/tune/cost_model.h"
#include "engine/tune/measurements.h"
#include "engine/util/csv.h"
#include "tests/engine/search/search_helpers.h"

using namespace prism;
using namespace prism::tune;

namespace {

// rms_linear searched for an H100's shared memory, and a tune result whose rows are the first
// `count` instantiations of its first family at n=8 d=4096, each "measured" at `times` (ms).
struct FakeTune {
  SearchResult search;
  backend::TargetDescription gpu = backend::cuda::cuda_h100_data();
  TuneResult result;
};

FakeTune fake_tune(const std::vector<double>& times) {
  FakeTune t;
  SearchLimits limits;
  limits.fast_memory_bytes = t.gpu.fast_memory_bytes;
  t.search = search::search_program(test::lowered_example("rms_linear"), limits);
  // The first family with enough instantiations at these dims (the first ones hold all of W).
  const DimBindings dims{{"n", 8}, {"d", 4096}};
  auto fits = [&](const Candidate& c) { return sgraph::enumerate(*c.graph, dims, t.gpu.tile_budget()).size() >= times.size(); };
  auto found = std::find_if(t.search.candidates.begin(), t.search.candidates.end(), fits);
  REQUIRE(found != t.search.candidates.end());
  const Candidate& family = *found;
  t.result.program = "rms_linear";
  t.result.target = backend::cuda::kTarget;
  t.result.bindings = {{"n", 8}, {"d", 4096}};
  t.result.threads = 128;
  t.result.baseline_ms = 0.04;
  t.result.measured.at = "2026-11-29T10:00:00Z";
  t.result.measured.tuner_revision = kTunerRevision;
  const std::vector<DimBindings> all = sgraph::enumerate(*family.graph, dims, t.gpu.tile_budget());
  REQUIRE(all.size() >= times.size());
  for (size_t i = 0; i < times.size(); ++i) {
    TuneRow row;
    row.candidate = family.id;
    row.family = family.hash;
    row.sizes = {all[i].begin(), all[i].end()};
    row.schedule = {{"threads", i == 1 ? 256 : 128}};
    row.cost_rank = int(i) + 1;
    row.ok = times[i] > 0;
    row.measured_ms = times[i];
    if (!row.ok) row.error = "wrong result: \"out\" differs, max error 3.5";
    t.result.rows.push_back(row);
  }
  return t;
}

// The model's estimate of each row, in seconds.
std::vector<double> estimates(const std::vector<StoredRow>& rows) {
  std::vector<double> s;
  for (const StoredRow& m : rows)
    s.push_back(estimate_cost(sgraph::instantiate(sgraph::parse(m.graph), DimBindings(m.bindings.begin(), m.bindings.end()),
                                                  DimBindings(m.sizes.begin(), m.sizes.end()), m.target.tile_budget()),
                              m.target)
                    .seconds);
  return s;
}

}  // namespace

TEST_CASE("csv: fields with commas, quotes and newlines come back whole; an open quote names its line", "[tune][measurements]") {
  const std::vector<std::string> fields{"plain", "a, b", "say \"hi\"", "two\nlines", ""};
  const std::string text = csv_record({"h1", "h2", "h3", "h4", "h5"}) + csv_record(fields) + csv_record({"x", "y", "z", "w", "v"});
  const std::vector<CsvRecord> records = parse_csv(text);
  REQUIRE(records.size() == 3);
  CHECK(records[1].fields == fields);
  CHECK(records[2].line == 4);  // the quoted newline counts
  CHECK(parse_csv("a,b\r\nc,d").back().fields == std::vector<std::string>{"c", "d"});
  CHECK_THROWS_WITH(parse_csv("a,b\nc,\"open\n"), Catch::Contains("line 2") && Catch::Contains("never closed"));
  CHECK_THROWS_WITH(parse_csv("a,\"b\"c\n"), Catch::Contains("after a closing quote"));
}

TEST_CASE("measurements: a GPU tune's rows round-trip through CSV with the family, sizes and device", "[tune][measurements]") {
  FakeTune t = fake_tune({0.030, 0.020, -1, 0.025});
  const std::vector<StoredRow> rows = measurements(t.result, t.search.candidates, backend_for(backend::cuda::kTarget), t.gpu);
  REQUIRE(rows.size() == 4);
  const std::string csv = measurements_header() + measurements_csv(rows);
  const std::vector<StoredRow> back = parse_measurements(csv);
  REQUIRE(back.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO(i);
    CHECK(back[i].date == "2026-11-29");
    CHECK(back[i].workload == "rms_linear");
    CHECK(back[i].bindings == t.result.bindings);
    CHECK(back[i].sizes == t.result.rows[i].sizes);
    CHECK(back[i].schedule == t.result.rows[i].schedule);
    CHECK(back[i].family == t.result.rows[i].family);
    CHECK(back[i].graph == rows[i].graph);
    CHECK(back[i].ok == rows[i].ok);
    CHECK(back[i].error == rows[i].error);
    CHECK(back[i].memory_bytes == Approx(rows[i].memory_bytes).epsilon(1e-9));
    CHECK(back[i].memory_bytes > 8 * 4096 * 2);  // at least the f16 activations
    CHECK(back[i].target.target == backend::cuda::kTarget);
    CHECK(back[i].target.model == t.gpu.model);
    CHECK(back[i].target.cores == t.gpu.cores);
    CHECK(back[i].target.bandwidth_gbs == t.gpu.bandwidth_gbs);
    CHECK(back[i].target.fast_memory_bytes == t.gpu.fast_memory_bytes);
    CHECK(backend::cuda::gpu_features(back[i].target).arch == "compute_90");
    CHECK(backend::cuda::gpu_features(back[i].target).tensor_peak_gflops == backend::cuda::gpu_features(t.gpu).tensor_peak_gflops);
  }
  // The estimate from the stored row is the estimate from the tune's own instance.
  CHECK(estimates(back) == estimates(rows));
  // Damage is an error that says where.
  std::string bad = csv;
  bad.replace(bad.find("compute_90"), 10, "compute_?? warp=64");
  CHECK_THROWS_WITH(parse_measurements(bad), Catch::Contains("line 2") && Catch::Contains("features") && Catch::Contains("warp"));
  std::string headless = csv.substr(csv.find('\n') + 1);
  CHECK_THROWS_WITH(parse_measurements(headless), Catch::Contains("no column 'date'"));
}

TEST_CASE("measurements: the regret is the measured time of today's first choice over the best", "[tune][measurements]") {
  FakeTune t = fake_tune({1, 1, 1, 1, -1});
  std::vector<StoredRow> rows = measurements(t.result, t.search.candidates, backend_for(backend::cuda::kTarget), t.gpu);
  const std::vector<double> cost = estimates(rows);
  const size_t first = size_t(std::min_element(cost.begin(), cost.begin() + 4) - cost.begin());
  // The model's first choice measured 1.5 times the best: regret 1.5.
  for (size_t i = 0; i < 4; ++i) rows[i].measured_ms = i == first ? 0.030 : 0.020 + 0.001 * double(i);
  std::vector<ShapeRegret> r = model_regret(rows);
  REQUIRE(r.size() == 1);
  CHECK(r[0].workload == "rms_linear");
  CHECK(r[0].ranked == 4);  // the failed row is not ranked
  CHECK(r[0].first_sizes == rows[first].sizes);
  CHECK(r[0].best_ms == Approx(first == 0 ? 0.021 : 0.020));
  CHECK(r[0].regret == Approx(0.030 / r[0].best_ms));
  // The first choice the fastest: regret 1.
  rows[first].measured_ms = 0.010;
  CHECK(model_regret(rows)[0].regret == Approx(1.0));
  // The same instance at another schedule ties in the model, which takes the default (128
  // threads) first: that one ran faster at 512 threads, so the regret is the default's time over it.
  rows[first].schedule = {{"threads", 128}};
  StoredRow wide = rows[first];
  wide.schedule = {{"threads", 512}};
  wide.measured_ms = 0.008;
  rows.push_back(wide);
  r = model_regret(rows);
  CHECK(r[0].first_schedule == backend::Schedule{{"threads", 128}});
  CHECK(r[0].regret == Approx(0.010 / 0.008));
  // So does a schedule ranked on a target of its own (2 blocks an SM), whose rows are numbered
  // in that ranking: its rank 1 does not put it before the default's row.
  rows.back().schedule = {{"threads", 256}, {"blocks_per_sm", 2}};
  rows.back().cost_rank = 1;
  rows[first].cost_rank = 3;
  r = model_regret(rows);
  CHECK(r[0].first_schedule == backend::Schedule{{"threads", 128}});
  CHECK(r[0].regret == Approx(0.010 / 0.008));
  rows.pop_back();
  // A row whose family no longer reads is left out and says why; another day is another shape.
  rows[first].graph = "kernel ???";
  rows[3].date = "2026-12-01";
  r = model_regret(rows);
  REQUIRE(r.size() == 2);
  const ShapeRegret& today = r[0].date == "2026-11-29" ? r[0] : r[1];
  CHECK(today.unranked.size() == (first == 3 ? 0u : 1u));
}

namespace {

// Every shape of every stored measurement file under bench/DIR/ (none where there is none).
std::vector<ShapeRegret> stored_shapes(const std::string& dir_name) {
  const std::filesystem::path dir = std::filesystem::path(PRISM_SOURCE_DIR) / "bench" / dir_name;
  std::vector<ShapeRegret> shapes;
  if (!std::filesystem::is_directory(dir)) return shapes;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".csv") continue;
    INFO(entry.path());
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (ShapeRegret& s : model_regret(parse_measurements(text))) shapes.push_back(std::move(s));
  }
  return shapes;
}

std::string shape_name(const ShapeRegret& s) { return s.device + " " + s.date + " " + s.workload + " " + sizes_text(s.bindings); }

}  // namespace

// Issue 48: every stored GPU measurement is ranked again by today's cost model; its first choice
// is within 10% of the best measured on at least 80% of the shapes (docs/tuning.md, "Stored
// measurements"). Files under bench/gpu/ come from scripts/gpu_session.sh's bench stage.
TEST_CASE("measurements: today's cost model ranks the stored GPU measurements with regret under 1.10 on 80% of shapes", "[tune][measurements][regret]") {
  const std::vector<ShapeRegret> shapes = stored_shapes("gpu");
  if (shapes.empty()) {
    WARN("no GPU measurements are stored under bench/gpu/ yet: nothing to rank");
    return;
  }
  int good = 0;
  for (const ShapeRegret& s : shapes) {
    INFO(shape_name(s) << ": regret " << s.regret);
    CHECK(s.unranked.empty());  // a stored family that no longer reads needs its file converted
    CHECK(s.ranked > 0);
    good += s.regret > 0 && s.regret < 1.10;
  }
  INFO(good << " of " << shapes.size() << " shapes under 1.10");
  CHECK(double(good) >= 0.8 * double(shapes.size()));
}

// The CPU's stored rows (bench/cpu/, prism_bench_tune --csv) guard its cost model: on no shape
// does today's model pick a first choice slower than 1.10 of the best where the model that
// measured them picked a faster one.
TEST_CASE("measurements: on the stored CPU rows today's cost model is no worse than the one that measured them", "[tune][measurements][regret]") {
  const std::vector<ShapeRegret> shapes = stored_shapes("cpu");
  REQUIRE(shapes.size() >= 10);
  for (const ShapeRegret& s : shapes) {
    INFO(shape_name(s) << ": regret " << s.regret << ", when stored " << s.stored_regret << "; first choice now candidate "
                       << s.first_candidate << " " << sizes_text(s.first_sizes));
    CHECK(s.unranked.empty());
    CHECK(s.ranked > 0);
    CHECK(s.regret <= std::max(s.stored_regret, 1.10) + 1e-9);
  }
}
