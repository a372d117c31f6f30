// The worker's side of one run (prism-runner, runner/worker.h): what a backend's worker half
// (Backend::serve) is handed, and what every backend's answer is made of. The daemon's side is
// KernelRunner::run (runner.h); between them one line (runner/worker.cpp says its words).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/runner/host_buffer.h"
#include "engine/ir/dtype.h"

namespace prism::backend {

// The inputs of every run, as the tuner handed them over (dense f32, in parameter order), in
// host buffers (host_buffer.h) that every kernel and its eager baseline read alike.
class WorkerInputs {
 public:
  // Reads tensors of `sizes` elements from `path`, replacing the ones held; "" or why not.
  std::string read(const std::string& path, const std::vector<int64_t>& sizes);
  size_t size() const { return f32_.size(); }
  int64_t elements(size_t i) const { return sizes_.at(i); }
  const float* f32(size_t i) const { return static_cast<const float*>(f32_.at(i)->data()); }
  // Input i stored at `dtype`: itself for f32, else a copy rounded to nearest even, made at the
  // first run that asks and kept for the later ones.
  const void* at(size_t i, DType dtype);

 private:
  std::vector<int64_t> sizes_;
  std::vector<std::unique_ptr<HostBuffer>> f32_;
  std::map<std::pair<size_t, DType>, std::unique_ptr<HostBuffer>> narrow_;
};

struct WorkerCall {
  WorkerInputs& inputs;
  std::vector<int64_t> output_elements;  // each output's, in return order
  std::string out_path;                  // where the checked call's outputs go, as f32; "-": a timing round
  std::string attachment;                // the file the daemon's side handed over with the run ("": none)
  std::string arguments;                 // the backend's own words (its KernelRunner::WorkerRun::arguments)
};

// One output as a backend holds it after the checked call: `elements` values stored at `dtype`.
struct OutputValues {
  const void* data = nullptr;
  int64_t elements = 0;
  DType dtype = DType::F32;
};
// Writes `outputs` widened to f32, in order, to `path`; "" or "error cannot write …".
std::string write_outputs(const std::string& path, const std::vector<OutputValues>& outputs);

// The outputs a host kernel writes: a host buffer each, at its dtype, NaN everywhere beforehand
// (so that an element the kernel does not write shows).
class HostOutputs {
 public:
  HostOutputs(const std::vector<int64_t>& elements, const std::vector<DType>& dtypes);
  void* const* pointers() const { return pointers_.data(); }
  std::string write(const std::string& path) const { return write_outputs(path, values_); }

 private:
  std::vector<std::unique_ptr<HostBuffer>> buffers_;
  std::vector<void*> pointers_;
  std::vector<OutputValues> values_;
};

// How a host kernel is timed: `warmup` untimed calls after the checked one, then at least
// `min_runs` timed calls, more until `min_time_s` has passed, at most `max_runs`.
struct HostTiming {
  int warmup = 0, min_runs = 1, max_runs = 1;
  double min_time_s = 0;
};
// A host kernel's run: `once` (which answers "" or "error …") called for the outputs, which are
// written to the call's file unless it is a timing round, then warmed up and timed; the answer.
std::string run_host_kernel(const WorkerCall& call, const HostOutputs& outputs, const std::function<std::string()>& once,
                            const HostTiming& timing);

// Dtypes as a run's words carry them, "bf16,f32", and back; the parse throws std::runtime_error
// for a name that is no dtype.
std::string dtype_list_text(const std::vector<DType>& dtypes);
std::vector<DType> parse_dtype_list(const std::string& text);

// The answer of a run timed by `times_ms` (one per timed call, at least one): "ok MEDIAN MIN RUNS".
std::string timed_reply(std::vector<double> times_ms);

}  // namespace prism::backend
