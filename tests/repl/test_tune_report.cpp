// What `tune` prints for a tune/run result (repl/tune_report.h), from results shaped as the
// daemon sends them (docs/protocol.md, TuneResult): no daemon, no timings of this machine.
#include <catch2/catch.hpp>

#include <sstream>

#include "repl/format.h"
#include "repl/tune_report.h"

using namespace prism::repl;
using nlohmann::json;

namespace {

// A decode MLP on a GPU as the 2026-11-27 H200 recheck measured it: cuBLAS eager 0.0222 ms, the
// best candidate 0.0385 ms.
json mlp_result(double baseline_ms, double best_ms) {
  json best = {{"candidate", 133}, {"sizes", {{"F1", 4}, {"g1", 8}}}, {"costRank", 1}, {"predictedMs", 0.03}, {"ok", true},
               {"measuredMs", best_ms}, {"spread", 0.02}, {"summary", "library matmul t0 = matmul(Y, Wu) after 1 custom kernel"}};
  // Each timed row's ratios, as the daemon sends them (tuner.h, fill_ratios).
  best["vsEager"] = baseline_ms / best_ms;
  best["rooflineFraction"] = 0.0039 / best_ms;
  json slower = best;
  slower["candidate"] = 51;
  slower["costRank"] = 2;
  slower["measuredMs"] = best_ms * 1.3;
  slower["vsEager"] = baseline_ms / (best_ms * 1.3);
  slower["rooflineFraction"] = 0.0039 / (best_ms * 1.3);
  slower["schedule"] = {{"threads", 512}};  // timed at another schedule than the default (tuner_steps.h)
  json failed = {{"candidate", 7}, {"sizes", {{"g1", 2}}}, {"costRank", 3}, {"predictedMs", 0.05}, {"ok", false},
                 {"error", "wrong result: output 0 differs at (3, 17)"}};
  return {{"program", "rmsnorm_mlp"}, {"target", "cuda"}, {"targetMachine", "the GPU"},
          {"threadsMeaning", "threads per block by default"}, {"targetModel", "NVIDIA H200"}, {"bindings", {{"n", 8}, {"d", 2048}}},
          {"threads", 256}, {"bandwidthGBs", 4382.0}, {"peakGflops", 67000.0}, {"baselineMs", baseline_ms}, {"bestMs", best_ms},
          {"speedup", baseline_ms / best_ms}, {"rooflineMs", 0.0039}, {"rooflineFraction", 0.0039 / best_ms}, {"rooflineBound", "cache"},
          {"rankCorrelation", 1.0}, {"regret", 1.0}, {"fromDb", false}, {"best", best}, {"rows", {best, slower, failed}},
          {"measured", {{"rounds", 5}, {"attempts", 1}, {"foreignCores", 0.0}}},
          {"stats", {{"instantiations", 10218}, {"compiled", 3}, {"cached", 0}, {"totalSeconds", 6.5}}}};
}

}  // namespace

TEST_CASE("tune report: the summary row, every timed candidate with its rank, and a failed row's reason", "[repl][tune]") {
  const std::string text = tune_report(mlp_result(0.0222, 0.0385), "rmsnorm_mlp");
  CHECK(text.find("rmsnorm_mlp d=2048 n=8 on cuda (NVIDIA H200; 4382 GB/s, 67000 GFLOP/s), 256 threads per block") == 0);
  INFO(text);
  CHECK(text.find("22.2 µs  38.5 µs  0.58x") != std::string::npos);
  CHECK(text.find("wrong result: output 0 differs at (3, 17)") != std::string::npos);
  CHECK(text.find("3 of 10218 instantiations timed") != std::string::npos);
  CHECK(text.find("F1=4 g1=8 threads=512") != std::string::npos);  // a schedule follows the sizes
  CHECK(text.find("roofline 3.9 µs (memory-bound; the working set stays in the caches)") != std::string::npos);
}

TEST_CASE("tune report: at 80 columns its tables fit, leaving out the columns read least, and say so", "[repl][tune][table]") {
  const std::string wide = tune_report(mlp_result(0.0222, 0.0385), "rmsnorm_mlp", 0);
  const std::string narrow = tune_report(mlp_result(0.0222, 0.0385), "rmsnorm_mlp", 80);
  INFO(narrow);
  CHECK(wide.find("SPREAD") != std::string::npos);
  const size_t header = narrow.find("\nCANDIDATE");
  REQUIRE(header != std::string::npos);
  CHECK(narrow.substr(header, narrow.find('\n', header + 1) - header).find("SPREAD") == std::string::npos);
  CHECK(narrow.find("left out to fit 80 columns; --json has every column)") != std::string::npos);
  // Every line of both tables (from each header to the line before the next blank or note) fits.
  std::istringstream lines(narrow);
  bool in_table = false;
  int table_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("EAGER", 0) == 0 || line.rfind("CANDIDATE", 0) == 0) in_table = true;
    else if (line.empty() || line[0] == '(' || line.rfind("note", 0) == 0 || line.rfind("roofline", 0) == 0 || line.rfind("edge", 0) == 0 ||
             line.rfind("timed", 0) == 0 || line.rfind("3 of", 0) == 0)
      in_table = false;
    if (!in_table) continue;
    ++table_lines;
    CHECK(display_width(line) < 80);
  }
  CHECK(table_lines >= 6);  // both headers, the summary row, the three timed rows
  for (const char* kept : {"VS EAGER", "ROOFLINE", "MEASURED", "CHECK", "0.58x"}) CHECK(narrow.find(kept) != std::string::npos);
}

TEST_CASE("tune report: when eager beats every candidate, the report says so before anyone exports one", "[repl][tune]") {
  const std::string slower = tune_report(mlp_result(0.0222, 0.0385), "rmsnorm_mlp");
  CHECK(slower.find("note: the eager baseline is faster than every candidate timed (the best runs at 0.58x its speed)") != std::string::npos);
  const std::string faster = tune_report(mlp_result(0.0385, 0.0222), "rmsnorm_mlp");
  CHECK(faster.find("1.73x") != std::string::npos);
  CHECK(faster.find("eager baseline is faster") == std::string::npos);
  // No candidate passed: nothing was compared, and the summary says why instead.
  json none = mlp_result(0.0222, 0.0385);
  none["best"] = nullptr;
  none["speedup"] = 0.0;
  none["rows"] = json::array({none["rows"][2]});
  const std::string failed = tune_report(none, "rmsnorm_mlp");
  CHECK(failed.find("no candidate passed its check") != std::string::npos);
  CHECK(failed.find("eager baseline is faster") == std::string::npos);
}

TEST_CASE("tune report: the headline is the best row's own ratios, and no row shows more than its roofline", "[repl][tune][table]") {
  // A result whose top-level speedup disagrees with its best row (an older daemon's median of
  // per-round ratios): the summary shows the row's, so the two lines cannot contradict.
  json r = mlp_result(64.0, 7.086);
  r["speedup"] = 8.01;
  r["target"] = "cpu";
  r["targetMachine"] = "the CPU";
  r["threadsMeaning"] = "threads";
  // The best beat the roofline drawn from the measured peaks: raised to its time, and said so.
  r["rooflineMs"] = 7.086;
  r["rooflineDrawnMs"] = 9.0;
  r["rooflineFraction"] = 1.0;
  r["best"]["rooflineFraction"] = 1.0;
  r["rows"][0] = r["best"];
  r["rows"][1]["rooflineFraction"] = 7.086 / (7.086 * 1.3);
  const std::string text = tune_report(r, "rms_linear");
  INFO(text);
  CHECK(text.find("64.0 ms  7.086 ms  9.03x    100%") != std::string::npos);
  CHECK(text.find("8.01x") == std::string::npos);
  CHECK(text.find("roofline 7.086 ms (memory-bound; the working set stays in the caches; raised to the best's time)") != std::string::npos);
  CHECK(text.find("note: the best ran faster than the 9.000 ms roofline drawn from the measured peaks (4382 GB/s, 67000 GFLOP/s)") !=
        std::string::npos);
  for (const char* over : {"101%", "126%", "178%"}) CHECK(text.find(over) == std::string::npos);
}

TEST_CASE("tune report: a time is printed in the unit that fits it, never 0.000 ms", "[repl][tune][table]") {
  CHECK(duration_text(0.00042) == "0.42 µs");
  CHECK(duration_text(0.0032) == "3.2 µs");
  CHECK(duration_text(0.0854) == "85.4 µs");
  CHECK(duration_text(0.385) == "0.385 ms");
  CHECK(duration_text(9.9) == "9.900 ms");
  CHECK(duration_text(64.0) == "64.0 ms");
  CHECK(duration_text(0) == "0.00 µs");
}
