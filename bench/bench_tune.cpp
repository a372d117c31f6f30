// The CPU speedup table (issues 5 and 18): every workload of docs/design.md §8 at its shapes,
// with its tensors stored at f16 and at bf16 (the examples declare f16; bf16 is the same text
// retyped): the eager baseline (one kernel per op, OpenBLAS sgemm on f32 copies of 16-bit
// operands), prism's best tuned candidate, the speedup, the fraction of the roofline at the
// declared dtype (bytes at 2 an element; the roofline prism reports: the bandwidth measured for
// the working set's size), and the tuner's regret (the cost model's first choice measured,
// over the best measured). Each row is the median of --repeat tunes (each measured anew), and
// the summary gives the medians the targets name. Run by scripts/bench_tune.sh, never by
// the tests. Arguments: workload names to restrict to, --top K (default 8), --repeat N
// (default 1), --dtype f16|bf16|f32 (repeatable; default f16 and bf16), --csv FILE (every timed
// row kept: docs/tuning.md, "Stored measurements").
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "bench/shapes.h"
#include "engine/backend/cpu/describe.h"
#include "engine/backend/cpu/measure.h"
#include "engine/tune/roofline.h"
#include "engine/workspace/workspace.h"

using namespace prism;
using namespace prism::bench;

namespace {

// One shape's tunes at one dtype.
struct Row {
  std::string workload, shape, dtype;
  std::vector<double> eager, best, speedup, roofline, regret;
  std::string bound, candidate, sizes;
  double search_s = 0;
  std::string bound_note;  // a raised roofline, where the checks' inputs were narrowed
};

bool mlp_type(const std::string& w) { return w == "rms_linear" || w == "rmsnorm_mlp" || w == "gated_mlp"; }

// Memory's streaming read (GB/s) and the f32 FMA peak (GFLOP/s) measured now. The rooflines use
// describe_cpu's figures, measured once and cached; a VM's spells move both (a 2-core Zen 3 read
// 13-16 GB/s from memory for half an hour, against the 24.8 its curve holds), so the table says
// what the machine gave around its tunes.
std::pair<double, double> measured_now(int cores) {
  backend::cpu::MeasureOptions options;
  options.threads = cores;
  options.read_repeats = 4;
  const backend::cpu::CpuMeasurement m = backend::cpu::measure_cpu(options);
  return {m.bandwidth_gbs, m.peak_gflops};
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 1;
  std::vector<std::string> dtypes, rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc) dtypes.push_back(argv[++i]);
    else rest.push_back(argv[i]);
  }
  if (dtypes.empty()) dtypes = {"f16", "bf16"};
  std::vector<char*> args;
  for (auto& a : rest) args.push_back(a.data());
  const auto [only, top, csv] = parse_args(int(args.size()), args.data());

  const backend::TargetDescription cpu = backend::cpu::describe_cpu();
  const auto before = measured_now(cpu.cores);
  std::printf("| workload | shape | dtype | eager ms | best ms | speedup | %% roofline | bound | regret | candidate | sizes | search s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<Row> rows;
  int threads = 0;
  for (const std::string& dtype : dtypes) {
    Workspace ws;
    ws.set_storage("", "");  // no tuning DB: every row is measured now
    std::set<std::string> opened;
    for (const Shape& s : shapes()) {
      if (!only.empty() && !only.count(s.workload)) continue;
      Row row{s.workload, tune::sizes_text(s.bindings), dtype, {}, {}, {}, {}, {}, "", "-", "-", 0, ""};
      try {
        row.search_s = open_and_search(ws, opened, s.workload, SearchLimits{}, dtype);
        for (int k = 0; k < repeat; ++k) {
          tune::TuneRequest request;
          request.bindings = s.bindings;
          request.top = top;
          request.fresh = true;
          tune::TuneResult r = ws.tune(s.workload, request);
          record_measurements(ws, r, csv);
          threads = r.threads;
          if (r.best < 0) throw std::runtime_error("no candidate passed");
          row.eager.push_back(r.baseline_ms);
          row.best.push_back(r.best_ms);
          row.speedup.push_back(r.speedup);
          row.roofline.push_back(100 * r.roofline_fraction);
          row.regret.push_back(tune::regret(r));
          row.bound = r.roofline_bound;
          row.candidate = std::to_string(r.rows[size_t(r.best)].candidate);
          row.sizes = tune::sizes_text(r.rows[size_t(r.best)].sizes);
          // The roofline raised to the best's time (tuner.h, fill_ratios); the reference overflowing on [-1, 1].
          char note[128] = "", range[64] = "";
          if (r.roofline_drawn_ms > 0) std::snprintf(note, sizeof note, ", raised from %.4g ms", r.roofline_drawn_ms);
          if (r.input_range < 1) std::snprintf(range, sizeof range, ", checked on inputs in ±%g", r.input_range);
          row.bound_note = std::string(note) + range;
          for (const auto& failed : r.rows)
            if (!failed.ok)
              std::fprintf(stderr, "  %s %s candidate %d %s: %s\n", s.workload, dtype.c_str(), failed.candidate,
                           tune::sizes_text(failed.sizes).c_str(), failed.error.c_str());
        }
        std::printf("| %s | %s | %s | %.3f | %.3f | %.2fx | %.0f%% | %s | %.2f | %s | %s | %.2f |\n", s.workload, row.shape.c_str(),
                    dtype.c_str(), median(row.eager), median(row.best), median(row.speedup), median(row.roofline), (row.bound + row.bound_note).c_str(),
                    median(row.regret), row.candidate.c_str(), row.sizes.c_str(), row.search_s);
        rows.push_back(row);
      } catch (const std::exception& e) {
        std::printf("| %s | %s | %s | failed: %s |\n", s.workload, row.shape.c_str(), dtype.c_str(), e.what());
      }
      std::fflush(stdout);
    }
  }

  // The targets, per dtype: median % roofline of the MLP-type shapes (>= 80%) and of the
  // others (>= 60%), the shapes slower than eager (none), the shapes with regret under 1.10 (80%).
  std::printf("\n| dtype | MLP-type median %% roofline | others' median %% roofline | slower than eager | regret < 1.10 |\n|---|---|---|---|---|\n");
  for (const std::string& dtype : dtypes) {
    std::vector<double> mlp, other;
    int slower = 0, good = 0, n = 0;
    for (const Row& r : rows) {
      if (r.dtype != dtype) continue;
      (mlp_type(r.workload) ? mlp : other).push_back(median(r.roofline));
      slower += median(r.speedup) < 1;
      good += median(r.regret) < 1.10;
      ++n;
    }
    std::printf("| %s | %.0f%% (%zu shapes) | %.0f%% (%zu shapes) | %d of %d | %d of %d |\n", dtype.c_str(), median(mlp), mlp.size(), median(other),
                other.size(), slower, n, good, n);
  }
  const auto after = measured_now(cpu.cores);
  std::printf("\nmachine: %s; streaming read %.1f GB/s from memory, %.1f GB/s from the last-level cache, %.1f GB/s from the "
              "first levels; f32 peak %.0f GFLOP/s; %d threads; medians of %d tune%s\n",
              cpu.model.c_str(), cpu.bandwidth_gbs, cpu.cache_bandwidth_gbs,
              cpu.read_curve.empty() ? cpu.cache_bandwidth_gbs : cpu.read_curve.front().second, cpu.peak_gflops, threads, repeat,
              repeat == 1 ? "" : "s");
  const backend::cpu::CpuFeatures& features = backend::cpu::cpu_features(cpu);
  if (features.bf16_amx_gflops > 0)
    std::printf("AMX tiles: %.0f GFLOP/s measured; bf16 x bf16 matmuls of loaded tiles run on them (the bf16 roofline's peak), "
                "f16 x f16 ones split into bf16 pairs at half that rate (the f16 roofline's peak), and so are computed f32 A "
                "against 16-bit B and W^T of nn.Linear weights\n",
                features.bf16_amx_gflops);
  else if (features.bf16_dot_gflops > 0)
    std::printf("vdpbf16ps: %.0f GFLOP/s measured; bf16 x bf16 matmuls %s\n", features.bf16_dot_gflops,
                features.bf16_dot_peak_gflops > 0 ? "use it (bf16 roofline at its peak)" : "widen to f32 FMAs, which are faster here");
  const double f16_peak = tune::roofline_peak_gflops(cpu, DType::F16), bf16_peak = tune::roofline_peak_gflops(cpu, DType::BF16);
  std::printf("16-bit rooflines' peak: f16 %.0f, bf16 %.0f GFLOP/s (FMAs fed by widened 16-bit vectors, measured: f16 %.0f, bf16 "
              "%.0f; %.0f%% and %.0f%% of the f32 peak)\n",
              f16_peak, bf16_peak, features.widen_f16_gflops, features.widen_bf16_gflops, 100 * features.widen_f16_gflops / cpu.peak_gflops,
              100 * features.widen_bf16_gflops / cpu.peak_gflops);
  std::printf("measured now, before and after the tunes: memory %.1f and %.1f GB/s, f32 FMAs %.0f and %.0f GFLOP/s (the rooflines "
              "use the figures above: where these are lower, the %% roofline understates)\n",
              before.first, after.first, before.second, after.second);
  std::printf("eager at 16-bit storage: each op reads and writes its dtype; a matmul widens 16-bit operands to f32 copies and calls "
              "OpenBLAS sgemm (Debian's OpenBLAS has no bf16 GEMM)\n");
}
