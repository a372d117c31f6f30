#include "engine/backend/cuda/run_worker.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include "engine/backend/cuda/cublas.h"
#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/plan.h"
#include "engine/backend/cuda/plan_run.h"
#include "engine/error.h"

namespace prism::backend::cuda {

namespace {

// The primary context and the cuBLAS handle live as long as the worker: a fresh CudaDevice per
// run (its own modules: every candidate names its kernels alike) retains the context cheaply.
struct Session {
  std::unique_ptr<CudaDevice> keep;
  std::unique_ptr<Cublas> cublas;
};
Session& session() {
  static Session s;
  return s;
}

// Device memory released however the run ends.
struct Allocations {
  CudaDevice& device;
  std::vector<CudaDevice::Ptr> ptrs;
  ~Allocations() {
    for (auto p : ptrs) try {
        device.release(p);
      } catch (const std::exception&) {
      }
  }
};

std::string run(const CudaPlan& plan, const std::string& out_path, WorkerInputs& inputs, int warmup, int runs) {
  if (plan.inputs.size() != inputs.size())
    return "error the plan has " + std::to_string(plan.inputs.size()) + " inputs, the worker holds " + std::to_string(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (plan.inputs[i].elements != inputs.elements(i))
      return "error input " + std::to_string(i) + " (" + plan.inputs[i].name + ") has " + std::to_string(inputs.elements(i)) +
             " elements, the plan says " + std::to_string(plan.inputs[i].elements);
  Session& s = session();
  if (!s.keep) s.keep = std::make_unique<CudaDevice>();
  CudaDevice device;
  if (plan.uses_cublas() && !s.cublas) s.cublas = std::make_unique<Cublas>();
  device.load_ptx(plan.ptx);

  Allocations mem{device, {}};
  DeviceTensors tensors;
  auto allocate = [&](const CudaTensor& t) {
    CudaDevice::Ptr p = device.allocate(size_t(t.elements) * size_t(dtype_bytes(t.dtype)));
    mem.ptrs.push_back(p);
    tensors[t.name] = {p, t.dtype};
    return p;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const CudaTensor& t = plan.inputs[i];
    device.to_device(allocate(t), inputs.at(i, t.dtype), size_t(t.elements) * size_t(dtype_bytes(t.dtype)));
  }
  for (const CudaTensor& t : plan.outputs) {
    const HostOutputs nan({t.elements}, {t.dtype});  // NaN everywhere: an output the plan does not write shows
    device.to_device(allocate(t), nan.pointers()[0], size_t(t.elements) * size_t(dtype_bytes(t.dtype)));
  }
  for (const CudaTensor& t : plan.scratch) {
    const CudaDevice::Ptr p = allocate(t);
    if (t.zeroed) device.zero_async(p, size_t(t.elements) * size_t(dtype_bytes(t.dtype)), nullptr);
  }
  auto sequence = [&] { run_steps(plan, device, s.cublas.get(), tensors); };
  sequence();
  device.synchronize();
  if (out_path != "-") {  // "-": a timing round, nothing written back
    std::vector<std::vector<char>> bytes;
    std::vector<OutputValues> values;
    for (const CudaTensor& t : plan.outputs) {
      bytes.emplace_back(size_t(t.elements) * size_t(dtype_bytes(t.dtype)));
      device.to_host(bytes.back().data(), tensors.at(t.name).ptr, bytes.back().size());
      values.push_back({bytes.back().data(), t.elements, t.dtype});
    }
    if (auto e = write_outputs(out_path, values); !e.empty()) return e;
  }
  for (int i = 0; i < warmup; ++i) sequence();
  device.synchronize();
  std::vector<double> times;
  for (int i = 0; i < std::max(1, runs); ++i) {
    device.flush_l2();  // each run starts cold, as on a model too large for L2
    times.push_back(device.time_ms(sequence, 1));
  }
  // Every launch must leave its ticket counters zero (ticket.h), or the next call computes wrong.
  for (const CudaTensor& t : plan.scratch) {
    if (!t.zeroed) continue;
    std::vector<unsigned> words(size_t(t.elements));
    device.to_host(words.data(), tensors.at(t.name).ptr, words.size() * 4);
    for (unsigned w : words)
      if (w != 0) return "error the plan's launches left its ticket counters " + t.name + " nonzero";
  }
  return timed_reply(times);
}

}  // namespace

RunOutcome run_plan(KernelRunner& runner, const PlanRun& run, const CancelToken* cancel) {
  WorkerRun w;
  w.backend = "cuda";
  w.arguments = std::to_string(run.warmup) + " " + std::to_string(run.runs);  // WARMUP RUNS
  w.attachment = run.plan;
  w.output_shapes = run.output_shapes;
  w.outputs = run.outputs;
  w.timeout_s = run.timeout_s;
  w.fresh_worker_after_failure = true;
  return runner.run(w, cancel);
}

std::string serve_plan(WorkerCall& call) {
  int warmup = 0, runs = 1;
  std::istringstream args(call.arguments);
  if (!(args >> warmup >> runs)) return "error malformed cuda run '" + call.arguments + "'";
  std::ifstream in(call.attachment, std::ios::binary);
  if (!in) return "error cannot read the CUDA plan " + call.attachment;
  std::stringstream text;
  text << in.rdbuf();
  try {
    return run(parse_plan(text.str()), call.out_path, call.inputs, warmup, runs);
  } catch (const std::exception& e) {
    return std::string("error ") + e.what();
  }
}

}  // namespace prism::backend::cuda
