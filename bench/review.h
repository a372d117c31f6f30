// The static review of the CUDA kernel the cost model ranks first at a decode shape, without a
// GPU (docs/tuning.md, "Static checks"): shared by prism_review_cuda and its test.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "bench/shapes.h"
#include "engine/backend/cuda/review.h"

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

// Searches `s.workload` once (f16 storage, a Hopper block's shared memory), takes family
// `candidate` (0: the one the cost model ranks first at its bindings) at the sizes the cost model
// picks for it, and reviews its CUDA source compiled for sm_90.
inline ShapeReview review_shape(Workspace& ws, std::set<std::string>& opened, const Shape& s, int candidate = 0) {
  SearchLimits limits;
  limits.fast_memory_bytes = kGpuOptInSharedBytes;
  open_and_search(ws, opened, s.workload, limits, "f16");
  ShapeReview r;
  r.kernel = ws.kernel_source(s.workload, candidate, s.bindings, backend::Target::Cuda);
  r.review = backend::cuda::review_plan(r.kernel.source, backend::cuda::parse_plan(r.kernel.launch));
  r.checks = backend::cuda::static_checks(r.review, one_launch_expected(s.workload));
  return r;
}

}  // namespace prism::bench
