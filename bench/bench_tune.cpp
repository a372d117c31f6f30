// The speedup table of issue 5: every workload of docs/design.md §8 at its shapes, f32 on this CPU:
// the eager baseline (one kernel per op, OpenBLAS matmul), prism's best tuned candidate, the
// speedup, the fraction of the roofline reached, and the search and tune times. Two rooflines:
// the one prism reports (bytes at the bandwidth measured for the working set's size: the caches'
// for a set that fits them), and issue 5's (bytes at the streaming bandwidth from memory).
// Run by scripts/bench_tune.sh, never by the tests. Arguments: workload names to restrict to,
// --top K (default 8).
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "bench/shapes.h"
#include "engine/backend/cpu/describe.h"
#include "engine/tune/roofline.h"
#include "engine/workspace/workspace.h"

using namespace prism;

using namespace prism::bench;

int main(int argc, char** argv) {
  const auto [only, top] = parse_args(argc, argv);
  Workspace ws;
  ws.set_storage("", "");  // no tuning DB: every row is measured now
  std::set<std::string> opened;
  std::printf("| workload | shape | eager ms | best ms | speedup | roofline ms | %% roofline | bound | %% memory roofline | candidate | sizes | search s | tune s | rank corr |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::string machine;
  for (const Shape& s : shapes()) {
    if (!only.empty() && !only.count(s.workload)) continue;
    const double search_s = open_and_search(ws, opened, s.workload, SearchLimits{});
    tune::TuneRequest request;
    request.bindings = s.bindings;
    request.top = top;
    try {
      tune::TuneResult r = ws.tune(s.workload, request);
      backend::TargetDescription cpu = backend::cpu::describe_cpu();
      char buf[256];
      std::snprintf(buf, sizeof buf, "%s; streaming read %.1f GB/s from memory, %.1f GB/s from the last-level cache; f32 peak %.0f GFLOP/s; %d threads",
                    cpu.model.c_str(), cpu.bandwidth_gbs, cpu.cache_bandwidth_gbs, cpu.peak_gflops, r.threads);
      machine = buf;
      std::string cand = r.best >= 0 ? std::to_string(r.rows[size_t(r.best)].candidate) : "-";
      std::string sizes = r.best >= 0 ? tune::sizes_text(r.rows[size_t(r.best)].sizes) : "-";
      // Issue 5's roofline: compulsory bytes at memory's streaming bandwidth, whatever fits where.
      backend::TargetDescription memory_only = cpu;
      memory_only.cache_bandwidth_gbs = 0;
      const DimBindings dims(s.bindings.begin(), s.bindings.end());
      const double memory_roofline_ms =
          1e3 * tune::program_roofline(ws.lowered_program(s.workload).first, dims, memory_only, DType::F32).seconds;
      std::printf("| %s | %s | %.3f | %.3f | %.2fx | %.3f | %.0f%% | %s | %.0f%% | %s | %s | %.2f | %.1f | %.2f |\n", s.workload,
                  tune::sizes_text(s.bindings).c_str(), r.baseline_ms, r.best_ms, r.speedup, r.roofline_ms,
                  100 * r.roofline_fraction, r.roofline_bound.c_str(), r.best_ms > 0 ? 100 * memory_roofline_ms / r.best_ms : 0.0,
                  cand.c_str(), sizes.c_str(), search_s, r.stats.total_s, r.rank_correlation);
      for (const auto& row : r.rows)
        if (!row.ok) std::fprintf(stderr, "  %s candidate %d %s: %s\n", s.workload, row.candidate, tune::sizes_text(row.sizes).c_str(), row.error.c_str());
    } catch (const std::exception& e) {
      std::printf("| %s | %s | failed: %s |\n", s.workload, tune::sizes_text(s.bindings).c_str(), e.what());
    }
    std::fflush(stdout);
  }
  std::printf("\nmachine: %s\n", machine.c_str());
}
