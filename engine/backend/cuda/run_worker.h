// prism-runner's CUDA run (runner/worker.cpp hands it the command): a plan
// (plan.h) read from a file, the worker's f32 inputs uploaded at each plan input's dtype, every
// output pre-filled with NaN (an unwritten output shows), the launch sequence run once and the
// outputs written back as f32, then warmed up and timed with CUDA events, each run of the whole
// sequence timed on its own (median and minimum of `runs`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace prism::backend::cuda {

struct HostInput {
  const float* data = nullptr;
  int64_t elements = 0;
};

// Returns the worker's reply: "ok MEDIAN_MS MIN_MS RUNS" or "error MESSAGE" (no CUDA device, a
// plan that does not match the inputs, a launch that fails).
std::string run_cuda_plan(const std::string& plan_path, const std::string& out_path, const std::vector<HostInput>& inputs,
                          int warmup, int runs);

}  // namespace prism::backend::cuda
