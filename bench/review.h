// The static review of the CUDA kernel the cost model ranks first at a decode shape, without a
// GPU (docs/tuning.md, "Static checks"): shared by prism_review_cuda and its test.
#pragma once
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bench/shapes.h"
#include "engine/backend/cuda/cost_rules.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/gpu_features.h"
#include "engine/backend/cuda/review.h"
#include "engine/backend/lower.h"
#include "engine/sgraph/instantiate.h"
#include "engine/tune/backends.h"
#include "engine/tune/tuner_steps.h"

namespace prism::bench {

// Issue 65's decode targets: the MLPs and rms_linear at 8 and 16 tokens of width 4096,
// Llama-3-8B's SwiGLU at 8 tokens (nn.Linear weights), Mirage #658, decode attention over 1024
// to 8192 cached keys (32 heads of 128).
inline std::vector<Shape> decode_targets() {
  std::vector<Shape> out;
  for (const char* w : {"rms_linear", "rmsnorm_mlp", "gated_mlp"})
    for (int64_t n : {8, 16}) out.push_back({w, {{"n", n}, {"d", 4096}}});
  out.push_back({"swiglu_ffn", {{"n", 8}, {"d", 4096}, {"h", 14336}}});
  out.push_back({"rms_proj", {{"n", 2}, {"d", 4096}, {"o", 6144}}});
  for (int64_t s : {1024, 4096, 8192}) out.push_back({"attention", {{"B", 32}, {"q", 1}, {"s", s}, {"e", 128}}});
  return out;
}

// The MLPs run in one launch (issue 65's check); the others may take more.
inline bool one_launch_expected(const std::string& workload) {
  return workload == "rmsnorm_mlp" || workload == "gated_mlp" || workload == "swiglu_ffn";
}

struct ShapeReview {
  tune::KernelSource kernel;  // the cost model's first choice for an H100 (no GPU here)
  backend::cuda::StaticReview review;
  std::vector<backend::cuda::StaticCheck> checks;
};

// The schedule the tuner times beside the default that holds 2 blocks of 8 warps an SM (issue
// 65's check): its instances ranked on half an SM's shared memory (Backend::scheduled_target).
inline backend::Schedule two_blocks_an_sm() { return {{"threads", 256}, {"blocks_per_sm", 2}}; }

// Opens and searches `s.workload` once (f16 storage, a Hopper block's shared memory).
inline void search_for_review(Workspace& ws, std::set<std::string>& opened, const Shape& s) {
  SearchLimits limits;
  limits.fast_memory_bytes = kGpuOptInSharedBytes;
  open_and_search(ws, opened, s.workload, limits, "f16");
}

// The family and sizes of prism's own kernels alone (no library call) among those the tuner times
// at `schedule` (tune::steps::scheduled_options: choose() takes the cheapest option of each count
// of library calls). {0, {}} where it times none.
inline std::pair<int, std::map<std::string, int64_t>> cheapest_own_kernels(Workspace& ws, const Shape& s, const backend::Schedule& schedule) {
  const backend::cuda::CudaBackend cuda;
  const backend::TargetDescription gpu = cuda.describe("");
  const backend::TargetDescription ranked_on = cuda.scheduled_target(schedule, gpu).value_or(gpu);
  const std::optional<SearchResult> searched = ws.search_result(s.workload);
  std::vector<sgraph::SGraph> graphs;
  for (const Candidate& c : searched->candidates) graphs.push_back(cuda.stored(*c.graph));
  const DimBindings dims(s.bindings.begin(), s.bindings.end());
  for (const tune::steps::Option& o : tune::steps::scheduled_options(graphs, dims, ranked_on, schedule, nullptr)) {
    const auto& kernels = o.shared->graph.kernels;
    if (std::none_of(kernels.begin(), kernels.end(), [](const sgraph::Kernel& k) { return k.vendor_matmul(); }))
      return {int(o.family) + 1, {o.sizes.begin(), o.sizes.end()}};
  }
  return {0, {}};
}

// Reviews `r.kernel` (of a family of `s.workload`'s search) compiled for sm_90, and runs the checks
// on it.
inline ShapeReview review_kernel(Workspace& ws, const Shape& s, ShapeReview r) {
  r.review = backend::cuda::review_plan(r.kernel.source, backend::cuda::parse_plan(r.kernel.launch));
  // The loads each block keeps in flight, from the kernel IR the source was printed from.
  const std::optional<SearchResult> searched = ws.search_result(s.workload);
  const Candidate& family = searched->candidates.at(size_t(r.kernel.candidate - 1));
  const backend::cuda::CudaBackend cuda;
  const backend::TargetDescription gpu = cuda.describe("");
  const DimBindings dims(r.kernel.bindings.begin(), r.kernel.bindings.end()), sizes(r.kernel.sizes.begin(), r.kernel.sizes.end());
  const sgraph::Instance instance = sgraph::instantiate(cuda.stored(*family.graph), dims, sizes, gpu.tile_budget());
  backend::cuda::add_loads_in_flight(r.review, backend::lower(instance, backend::cuda_lowering()), cuda.codegen_options(gpu, r.kernel.schedule));
  const auto little = int64_t(gpu.bandwidth_gbs * 1e9 * backend::cuda::kLoadedLatencySeconds);
  r.checks = backend::cuda::static_checks(r.review, one_launch_expected(s.workload), 2, 16, little);
  return r;
}

// Searches `s.workload` once (search_for_review), takes family
// `candidate` (0: the one the cost model ranks first at its bindings) at `sizes` (null: those the
// cost model picks for it) at `schedule` (empty: the default), and reviews its CUDA source
// compiled for sm_90.
inline ShapeReview review_shape(Workspace& ws, std::set<std::string>& opened, const Shape& s, int candidate = 0,
                                const backend::Schedule& schedule = {}, const std::map<std::string, int64_t>* sizes = nullptr) {
  search_for_review(ws, opened, s);
  ShapeReview r;
  r.kernel = ws.kernel_source(s.workload, candidate, s.bindings, backend::cuda::kTarget, sizes, nullptr, schedule.empty() ? nullptr : &schedule);
  return review_kernel(ws, s, std::move(r));
}

// The kernel the tuner always times at `schedule` that runs prism's kernels alone
// (cheapest_own_kernels), reviewed; nullopt where every family calls a library.
inline std::optional<ShapeReview> review_own_kernels(Workspace& ws, std::set<std::string>& opened, const Shape& s, const backend::Schedule& schedule) {
  search_for_review(ws, opened, s);
  const auto [candidate, sizes] = cheapest_own_kernels(ws, s, schedule);
  if (candidate == 0) return std::nullopt;
  return review_shape(ws, opened, s, candidate, schedule, &sizes);
}

}  // namespace prism::bench
