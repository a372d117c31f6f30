// Running generated kernels in a separate worker process (`prism-runner`, whose side is
// runner/worker.h), so that a kernel that crashes or hangs fails its own candidate and never the
// daemon (docs/tuning.md).
//
// A KernelRunner owns one worker. The inputs are handed over once (a file in /dev/shm, mapped by
// the worker) and every run reuses them; each run loads a shared object (cpu/abi.h), calls it once
// for the outputs that are checked, then times it: the median of N calls after warm-up. A worker
// that dies (signal, exit) or does not answer within the run's time limit is killed, that run
// fails with a message saying what happened, and the next run starts a fresh worker.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/cancel.h"
#include "engine/interp/tensor.h"

namespace prism::backend {

struct RunRequest {
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

// A run on the GPU: a CUDA plan (cuda/plan.h) in its text form. The plan's inputs are this runner's
// inputs in order (uploaded at each plan input's dtype), its outputs come back as f32 tensors of
// `output_shapes`; the whole launch sequence is run once, warmed up, then timed `runs` times with
// CUDA events (median, minimum).
struct CudaRunRequest {
  std::string plan;  // cuda::plan_text()
  std::vector<std::vector<int64_t>> output_shapes;  // in return order
  int warmup = 5;
  int runs = 50;
  double timeout_s = 60;   // for the whole run (context, module load, checked run, timing)
  bool outputs = true;     // false: a timing round; the outputs are neither written nor read back
};

struct RunOutcome {
  bool ok = false;
  std::string error;            // when !ok: "the kernel crashed (SIGSEGV, segmentation fault)", …
  // A failure that says nothing about the kernel: a time-out (the machine may have been busy), a
  // worker killed from outside (SIGKILL, SIGTERM), a library that would not load. Never stored as
  // a tuning answer (issue 17, D9).
  bool transient = false;
  std::vector<Tensor> outputs;  // f32, from the first (checked) call; none for a timing round
  double median_ms = 0, min_ms = 0;
  int runs = 0;
};

// Removes the private directories of kernel runners whose process is gone; returns how many.
size_t remove_stale_runner_dirs();

// $PRISM_RUNNER, else prism-runner next to the running executable.
std::string default_runner_path();

class KernelRunner {
 public:
  explicit KernelRunner(std::string runner_path = default_runner_path());
  ~KernelRunner();
  KernelRunner(const KernelRunner&) = delete;
  KernelRunner& operator=(const KernelRunner&) = delete;

  // The inputs of every following run, in parameter order (converted to dense f32).
  void set_inputs(const std::vector<Tensor>& inputs);
  // Never throws for what the kernel does; throws Error{Cancelled} when `cancel` fires (the worker
  // is killed) and Error{Failed} when no worker can be started at all.
  RunOutcome run(const RunRequest& request, const CancelToken* cancel = nullptr);
  // The same for a CUDA plan. A run that fails on the device also ends the worker (a CUDA error
  // can poison its context), so the next run starts a fresh one.
  RunOutcome run_cuda(const CudaRunRequest& request, const CancelToken* cancel = nullptr);
  // The worker's process id, 0 when none runs (the tuner counts its CPU time apart from the
  // machine's, engine/tune/timing.h).
  int worker_pid() const;

 private:
  struct Worker;
  void start();
  void stop();
  RunOutcome exchange(const std::string& command, const std::string& out_path, const std::vector<std::vector<int64_t>>& output_shapes,
                      double timeout_s, const CancelToken* cancel);
  std::string runner_path_;
  std::string dir_;                 // private directory for the input and output files
  std::vector<int64_t> input_sizes_;
  std::unique_ptr<Worker> worker_;
  uint64_t runs_ = 0;
};

}  // namespace prism::backend
