// A CPU kernel library (abi.h) run in the kernel runner's worker, both halves: the daemon's
// (run_library, which CpuBackend::run calls) and the worker's (serve_library, CpuBackend::serve).
// The worker loads the library, hands it the inputs at their stored dtypes (converted once), calls
// it once for the outputs (NaN beforehand, so that an unwritten one shows), then warms up and
// times it: the median of N calls.
#pragma once
#include <string>
#include <vector>

#include "engine/backend/runner/runner.h"
#include "engine/backend/runner/worker_call.h"
#include "engine/ir/dtype.h"

namespace prism::backend::cpu {

struct LibraryRun {
  std::string library;                             // a shared object implementing abi.h
  std::vector<std::vector<int64_t>> output_shapes; // in return order
  int threads = 1;
  int warmup = 2;          // untimed calls after the checked one
  int min_runs = 5;        // timed calls: at least min_runs, and more until min_time_s has passed,
  int max_runs = 50;       // at most max_runs
  double min_time_s = 0.2;
  double timeout_s = 20;   // for the whole run (load, checked call, warm-up, timing)
  bool outputs = true;     // false: a timing round; the outputs are neither written nor read back
  // The dtypes the library's inputs and outputs are stored at (empty: every one f32). Inputs are
  // handed to it converted, outputs widened to f32 when read back.
  std::vector<DType> input_dtypes, output_dtypes;
};

RunOutcome run_library(KernelRunner& runner, const LibraryRun& run, const CancelToken* cancel = nullptr);

// The worker's half; throws for a malformed run (the error is the answer).
std::string serve_library(WorkerCall& call);

}  // namespace prism::backend::cpu
