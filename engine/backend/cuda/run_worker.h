// A CUDA plan (plan.h) run in the kernel runner's worker, both halves: the daemon's (run_plan,
// which CudaBackend::run calls) and the worker's (serve_plan, CudaBackend::serve). The worker reads
// the plan from the run's attachment, uploads its f32 inputs at each plan input's dtype, pre-fills
// every output with NaN (an unwritten output shows), runs the launch sequence once and writes the
// outputs back as f32, then warms up and times it with CUDA events, each run of the whole sequence
// timed on its own from a cold L2 (median and minimum of `runs`). A run that fails on the device
// also ends the worker (a CUDA error can poison its context).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend/runner/runner.h"
#include "engine/backend/runner/worker_call.h"

namespace prism::backend::cuda {

struct PlanRun {
  std::string plan;  // plan_text()
  std::vector<std::vector<int64_t>> output_shapes;  // in return order
  int warmup = 5;
  int runs = 50;
  double timeout_s = 60;   // for the whole run (context, module load, checked run, timing)
  bool outputs = true;     // false: a timing round; the outputs are neither written nor read back
};

RunOutcome run_plan(KernelRunner& runner, const PlanRun& run, const CancelToken* cancel = nullptr);

// The worker's half: "ok MEDIAN_MS MIN_MS RUNS" or "error MESSAGE" (no CUDA device, a plan that
// does not match the inputs, a launch that fails).
std::string serve_plan(WorkerCall& call);

}  // namespace prism::backend::cuda
