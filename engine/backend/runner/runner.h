// Running generated kernels in a separate worker process (`prism-runner`, whose side is
// runner/worker.h), so that a kernel that crashes or hangs fails its own candidate and never the
// daemon (docs/tuning.md).
//
// A KernelRunner owns one worker. The inputs are handed over once (a file in /dev/shm, mapped by
// the worker) and every run reuses them; each run is one backend's (WorkerRun): its worker half
// loads the build, calls it once for the outputs that are checked, then times it. A worker
// that dies (signal, exit) or does not answer within the run's time limit is killed, that run
// fails with a message saying what happened, and the next run starts a fresh worker.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/cancel.h"
#include "engine/interp/tensor.h"

namespace prism::backend {

// One run in the worker, for the backend named `backend`: the worker hands it to that backend's
// worker half (Backend::serve, worker_call.h), which loads the build, calls it once for the outputs
// that are checked (or not at all in a timing round) and times it as the backend times its
// kernels. The daemon's half of each backend writes the words it reads (`arguments`).
struct WorkerRun {
  std::string backend;                              // the serving backend's name ("cpu", "cuda")
  std::string arguments;                            // the backend's own words, on one line
  std::string attachment;                           // a text handed over as a file (a CUDA plan); "": none
  std::vector<std::vector<int64_t>> output_shapes;  // in return order
  bool outputs = true;     // false: a timing round; the outputs are neither written nor read back
  double timeout_s = 20;   // for the whole run (load, checked call, warm-up, timing)
  // A failure that may leave the worker unfit for the next run (a CUDA error poisons its
  // context): the worker is ended with it and the next run starts a fresh one.
  bool fresh_worker_after_failure = false;
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
  size_t input_count() const { return input_sizes_.size(); }
  // Never throws for what the kernel does; throws Error{Cancelled} when `cancel` fires (the worker
  // is killed) and Error{Failed} when no worker can be started at all.
  RunOutcome run(const WorkerRun& run, const CancelToken* cancel = nullptr);
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
