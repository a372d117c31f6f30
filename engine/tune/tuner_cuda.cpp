// tune_families_cuda (tuner.h): the tuner's flow on the GPU.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/backend/runner/runner.h"
#include "engine/backend/cuda/codegen.h"
#include "engine/backend/cuda/eager.h"
#include "engine/backend/cuda/nvrtc.h"
#include "engine/backend/cuda/plan.h"
#include "engine/error.h"
#include "engine/interp/interpreter.h"
#include "engine/tune/compare.h"
#include "engine/tune/cost_model.h"
#include "engine/tune/roofline.h"
#include "engine/tune/tuner.h"
#include "engine/tune/tuner_steps.h"

namespace prism::tune {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kThreadsPerBlock = 128;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Each output against the reference with its dtype's tolerance, relative to its largest value.
Comparison check_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::vector<DType>& dtypes) {
  Comparison all;
  if (got.size() != want.size()) {
    all.failure = std::to_string(got.size()) + " outputs, expected " + std::to_string(want.size());
    return all;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    double scale = 0;
    for (float x : want[i].data) scale = std::max(scale, double(std::fabs(x)));
    double tol = dtypes[i] == DType::F16 ? 1e-2 : dtypes[i] == DType::BF16 ? 5e-2 : 1e-3;
    Comparison c = compare_outputs({got[i]}, {want[i]}, tol, tol * std::max(scale, 1e-30));
    all.max_error = std::max(all.max_error, c.max_error);
    if (c.failure && !all.failure) all.failure = "output " + std::to_string(i) + ": " + *c.failure;
  }
  return all;
}

}  // namespace

TuneResult tune_families_cuda(const Program& lowered, const std::vector<Candidate>& families, const TuneRequest& request,
                              const TuneEnvironment& env, const CancelToken* cancel,
                              const std::function<void(const TuneProgress&)>& progress) {
  const auto start = Clock::now();
  auto report = [&](const std::string& phase, int done, int total) {
    if (progress) progress({phase, done, total, seconds_since(start)});
  };
  if (request.target != backend::Target::Cuda) throw Error(Error::Kind::InvalidArgument, "tune_families_cuda: the target is not CUDA");
  if (backend::cuda::NvrtcStatus nvrtc = backend::cuda::nvrtc_status(); !nvrtc.available)
    throw Error(Error::Kind::Failed, "target 'cuda' needs NVRTC: " + nvrtc.detail);
  const DimBindings dims(request.bindings.begin(), request.bindings.end());
  steps::check_bindings(lowered, dims);
  const backend::TargetDescription& target = env.target;
  const std::string arch = target.arch.empty() ? "compute_90" : target.arch;

  TuneResult result;
  result.program = lowered.name;
  result.target = backend::Target::Cuda;
  result.target_model = target.model;
  result.bindings = request.bindings;
  result.top = request.top;
  result.threads = kThreadsPerBlock;
  result.peak_gflops = target.peak_gflops;

  // The reference at the declared dtypes, on seeded random inputs.
  report("reference", 0, 1);
  std::map<std::string, Tensor> named;
  std::vector<Tensor> inputs = steps::random_inputs(lowered, dims, request.seed, &named);
  std::vector<Tensor> reference = interpret(lowered, dims, named, cancel);
  std::vector<DType> out_dtypes;
  for (int id : lowered.outputs) out_dtypes.push_back(lowered.value(id).type.dtype);
  const DType storage = lowered.inputs.empty() ? DType::F32 : lowered.value(lowered.inputs.front()).type.dtype;
  backend::TargetDescription roof_target = target;
  if (storage != DType::F32 && target.tensor_peak_gflops > 0) roof_target.peak_gflops = target.tensor_peak_gflops;
  Roofline roof = program_roofline(lowered, dims, roof_target, storage);
  result.roofline_ms = roof.seconds * 1e3;
  result.roofline_bound = roof.bound == "memory" && roof.level == "cache" ? "cache" : roof.bound;
  result.bandwidth_gbs = roof.bandwidth_gbs;
  result.peak_gflops = roof_target.peak_gflops;

  report("ranking", 0, int(families.size()));
  std::vector<sgraph::SGraph> graphs;
  for (const auto& family : families) graphs.push_back(*family.graph);
  std::vector<steps::Option> ranked = steps::rank_options(graphs, dims, target, cancel);
  result.stats.instantiations = ranked.size();
  std::vector<size_t> chosen = steps::choose(ranked, request.top);

  // Plans: the eager baseline first, then the chosen instantiations; each compiled to PTX.
  std::vector<std::string> input_names;
  for (int id : lowered.inputs) input_names.push_back(lowered.value(id).name);
  std::vector<backend::cuda::CudaPlan> plans(chosen.size() + 1);
  std::vector<std::string> errors(chosen.size() + 1);
  report("compiling", 0, int(plans.size()));
  auto compile_start = Clock::now();
  auto compile = [&](size_t i, const std::string& source) {
    backend::cuda::PtxResult ptx = backend::cuda::compile_to_ptx(source, arch, env.kernel_cache_dir.empty() ? "" : env.kernel_cache_dir + "/ptx");
    ++(ptx.cached ? result.stats.cached : result.stats.compiled);
    plans[i].ptx = std::move(ptx.ptx);
  };
  try {
    backend::cuda::CudaEager eager = backend::cuda::generate_cuda_eager(lowered, dims);
    plans[0] = std::move(eager.plan);
    compile(0, eager.source);
  } catch (const std::exception& e) {
    errors[0] = std::string("the eager baseline: ") + e.what();
  }
  backend::cuda::CudaCodegenOptions codegen;
  codegen.threads_per_block = kThreadsPerBlock;
  codegen.shared_memory_bytes = target.fast_memory_bytes;
  for (size_t i = 0; i < chosen.size(); ++i) {
    if (cancel) cancel->check();
    report("compiling", int(i) + 1, int(plans.size()));
    const sgraph::Instance& instance = ranked[chosen[i]].instance;
    try {
      backend::cuda::CudaSource source = backend::cuda::generate_cuda_source(instance, codegen);
      plans[i + 1] = backend::cuda::candidate_plan(instance, source, input_names);
      compile(i + 1, source.source);
    } catch (const std::exception& e) {
      errors[i + 1] = std::string("cannot generate or compile CUDA code: ") + e.what();
    }
  }
  result.stats.compile_s = seconds_since(compile_start);

  // Timing: every plan in one worker, baseline first, all on the same inputs.
  auto run_start = Clock::now();
  backend::KernelRunner runner = env.runner_path.empty() ? backend::KernelRunner() : backend::KernelRunner(env.runner_path);
  runner.set_inputs(inputs);
  backend::CudaRunRequest run;
  for (const auto& t : reference) run.output_shapes.push_back(t.shape);
  run.timeout_s = steps::kernel_timeout_s(run.timeout_s);
  auto time_plan = [&](size_t i, TuneRow& row) {
    if (!errors[i].empty()) {
      row.error = errors[i];
      return;
    }
    run.plan = backend::cuda::plan_text(plans[i]);
    steps::record_run(row, runner.run_cuda(run, cancel),
                      [&](const std::vector<Tensor>& got) { return check_outputs(got, reference, out_dtypes); });
  };
  steps::time_items(result, ranked, chosen, families, time_plan, report);
  result.stats.run_s = seconds_since(run_start);
  steps::finish(result);
  result.stats.total_s = seconds_since(start);
  report("done", int(chosen.size()) + 1, int(chosen.size()) + 1);
  return result;
}

}  // namespace prism::tune
