// The speedup table on the GPU (issue 6): every workload of docs/design.md §8 at its shapes and
// issue 48's target shapes (bench/shapes.h), at f16 (a layer examples/layers declares at f32 is
// stored at f16): the eager baseline (a kernel per op, cuBLAS matmul), prism's best tuned
// candidate, the speedup, the fraction of the roofline (data-sheet bandwidth and peaks). Run by
// scripts/bench_gpu.sh, never by the tests. Arguments: workload names to restrict to, --top K
// (default 8), --csv FILE (every timed row kept: docs/tuning.md, "Stored measurements").
// Without a device it says why and exits 0.
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

#include "bench/shapes.h"
#include "engine/backend/cuda/gpu_features.h"
#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/nvrtc.h"
#include "engine/backend/cuda/describe.h"
#include "engine/backend/target.h"
#include "engine/workspace/workspace.h"

using namespace prism;
using namespace prism::bench;

int main(int argc, char** argv) {
  const auto [only, top, csv] = parse_args(argc, argv);
  backend::cuda::CudaStatus device = backend::cuda::cuda_status();
  backend::cuda::NvrtcStatus nvrtc = backend::cuda::nvrtc_status();
  if (!device.available || !nvrtc.available) {
    std::printf("no CUDA device: %s\n", device.available ? nvrtc.detail.c_str() : device.detail.c_str());
    return 0;
  }
  backend::TargetDescription gpu = backend::cuda::describe_cuda_device();
  Workspace ws;
  ws.set_storage("", "");  // no tuning DB: every row is measured now
  std::set<std::string> opened;
  std::printf("| workload | shape | eager (cuBLAS) ms | prism ms | speedup | roofline ms | %% roofline | bound | candidate | sizes | search s | tune s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Shape& s : gpu_shapes()) {
    if (!only.empty() && !only.count(s.workload)) continue;
    SearchLimits limits;
    limits.fast_memory_bytes = kGpuOptInSharedBytes;
    const double search_s = open_and_search(ws, opened, s.workload, limits, "f16");
    tune::TuneRequest request;
    request.target = backend::cuda::kTarget;
    request.bindings = s.bindings;
    request.top = top;
    try {
      tune::TuneResult r = ws.tune(s.workload, request);
      record_measurements(ws, r, csv);
      std::string cand = r.best >= 0 ? std::to_string(r.rows[size_t(r.best)].candidate) : "-";
      std::string sizes = r.best >= 0 ? tune::sizes_text(r.rows[size_t(r.best)].sizes) : "-";
      std::printf("| %s | %s | %.4f | %.4f | %.2fx | %.4f | %.0f%% | %s | %s | %s | %.2f | %.1f |\n", s.workload,
                  tune::sizes_text(s.bindings).c_str(), r.baseline_ms, r.best_ms, r.speedup, r.roofline_ms, 100 * r.roofline_fraction,
                  r.roofline_bound.c_str(), cand.c_str(), sizes.c_str(), search_s, r.stats.total_s);
      if (!r.baseline_error.empty()) std::fprintf(stderr, "  %s eager: %s\n", s.workload, r.baseline_error.c_str());
      for (const auto& row : r.rows)
        if (!row.ok) std::fprintf(stderr, "  %s candidate %d %s: %s\n", s.workload, row.candidate, tune::sizes_text(row.sizes).c_str(), row.error.c_str());
    } catch (const std::exception& e) {
      std::printf("| %s | %s | failed: %s |\n", s.workload, tune::sizes_text(s.bindings).c_str(), e.what());
    }
    std::fflush(stdout);
  }
  std::printf("\ndevice: %s; %.0f GB/s, f32 %.0f GFLOP/s, f16 tensor cores %.0f GFLOP/s (data sheet)\n", gpu.model.c_str(), gpu.bandwidth_gbs,
              gpu.peak_gflops, backend::cuda::gpu_features(gpu).tensor_peak_gflops);
}
