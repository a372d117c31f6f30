#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/run_worker.h"

#include <algorithm>

#include "engine/backend/cuda/codegen.h"
#include "engine/backend/cuda/cost_rules.h"
#include "engine/backend/cuda/describe.h"
#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/eager.h"
#include "engine/backend/cuda/export.h"
#include "engine/backend/cuda/gpu_features.h"
#include "engine/backend/cuda/nvrtc.h"
#include "engine/backend/cuda/plan.h"
#include "engine/backend/cuda/resources.h"
#include "engine/backend/lower.h"
#include "engine/util/cache.h"
#include "engine/util/private_files.h"
#include "engine/util/sealed_file.h"
#include "engine/util/text.h"

namespace prism::backend::cuda {

namespace {

// What a person reading the source needs to launch it: each kernel's grid, threads, dynamic
// shared memory and pointer parameters, and the intermediate tensors to allocate.
std::string launches(const CudaSource& cuda) {
  std::string s = "// Launches, in order (one thread block per grid point; dynamic shared memory in bytes):\n";
  for (const auto& k : cuda.kernels)
    s += "//   " + k.name + "<<<" + std::to_string(k.grid_blocks) + ", " + std::to_string(k.threads) + ", " +
         std::to_string(k.shared_bytes) + ">>>(" + join(k.params, ", ") + ")\n";
  if (!cuda.scratch_tensors.empty()) s += "// Intermediate tensors the caller allocates: " + join(cuda.scratch_tensors, ", ") + "\n";
  for (const auto& [name, words] : cuda.counters)
    s += "// " + name + ": " + std::to_string(words) + " unsigned ints the caller allocates and sets to 0 once (ticket counters)\n";
  return s;
}

}  // namespace

// Kernels run only with a device and NVRTC; without a device NVRTC still compiles the sources.
Backend::Availability CudaBackend::availability() const {
  CudaStatus device = cuda_status();
  NvrtcStatus nvrtc = nvrtc_status();
  return {device.available && nvrtc.available, device.detail + "; " + nvrtc.detail};
}

TargetDescription CudaBackend::describe(const std::string&) const {
  TargetDescription t = cuda_status().available ? describe_cuda_device() : cuda_h100_data();
  t.target = target();
  return t;
}

int CudaBackend::threads(int, const TargetDescription&) const { return kThreadsPerBlock; }

std::vector<Schedule> CudaBackend::schedules(const TargetDescription&) const {
  return {{{"threads", kThreadsPerBlock}}, {{"threads", 256}}, {{"threads", 512}}, {{"threads", 256}, {"blocks_per_sm", 2}}};
}

namespace {

int64_t blocks_per_sm(const Schedule& schedule) {
  auto found = schedule.find("blocks_per_sm");
  return found == schedule.end() ? 1 : std::max<int64_t>(1, found->second);
}

}  // namespace

std::optional<TargetDescription> CudaBackend::scheduled_target(const Schedule& schedule, const TargetDescription& target) const {
  const int64_t blocks = blocks_per_sm(schedule);
  if (blocks == 1) return std::nullopt;
  // A block may opt into the SM's whole shared memory less the system's reservation for it (sm_80
  // on); each of `blocks` gets its share less its own, in the unit the SM gives it in.
  const SmLimits sm = sm90_limits();
  TargetDescription t = target;
  const int64_t sm_shared = target.fast_memory_bytes + sm.shared_reserved;
  t.fast_memory_bytes = (sm_shared / blocks - sm.shared_reserved) / sm.shared_unit * sm.shared_unit;
  t.spill_tile_bytes = std::min(t.spill_tile_bytes, t.fast_memory_bytes);
  t.cores = int(target.cores * blocks);
  gpu_features(t).threads_per_block = int(resolve_schedule(schedule, target).at("threads"));
  gpu_features(t).blocks_per_sm = int(blocks);
  return t;
}

CudaCodegenOptions CudaBackend::codegen_options(const TargetDescription& target, const Schedule& schedule) const {
  const Schedule resolved = resolve_schedule(schedule, target);
  CudaCodegenOptions options;
  options.shared_memory_bytes = scheduled_target(resolved, target).value_or(target).fast_memory_bytes;
  options.threads_per_block = int(resolved.at("threads"));
  options.blocks_per_sm = int(blocks_per_sm(resolved));
  return options;
}

kir::Program CudaBackend::kernel_ir(const sgraph::Instance& instance, const TargetDescription& target, const Schedule& schedule) const {
  return printed_program(lower(instance, cuda_lowering()), codegen_options(target, schedule));
}

Build CudaBackend::generate(const sgraph::Instance& instance, const TargetDescription& target, const Schedule& schedule) const {
  return make_build("cannot generate CUDA code", [&](Build& b) {
    const CudaCodegenOptions options = codegen_options(target, schedule);
    const kir::Program lowered = lower(instance, cuda_lowering());
    CudaSource cuda = generate_cuda_source(lowered, options);
    b.source = launches(cuda) + cuda.source;
    b.launch = plan_text(candidate_plan(instance, lowered, cuda));
  });
}

Build CudaBackend::eager(const Program& stored, const DimBindings& dims) const {
  return make_build("the eager baseline", [&](Build& b) {
    CudaEager eager = generate_cuda_eager(stored, dims);
    b.source = eager.source;
    b.launch = plan_text(eager.plan);
  });
}

// NVRTC, one source at a time, each PTX cached by content under the cache's ptx/.
void CudaBackend::compile(std::vector<Build>& builds, const TargetDescription& target, const CompileSettings& settings) const {
  const std::string arch = gpu_features(target).arch.empty() ? "compute_90" : gpu_features(target).arch;
  for (Build& b : builds) {
    if (!b.error.empty()) continue;
    try {
      PtxResult ptx = compile_to_ptx(b.source, arch, settings.cache_dir.empty() ? "" : settings.cache_dir + "/ptx");
      CudaPlan plan = parse_plan(b.launch);
      plan.ptx = std::move(ptx.ptx);
      b.runnable = plan_text(plan);
      b.cached = ptx.cached;
    } catch (const std::exception& e) {
      b.error = std::string("cannot compile CUDA code: ") + e.what();
      b.transient = true;
    }
  }
}

RunOutcome CudaBackend::run(KernelRunner& runner, const Build& build, const RunSettings& settings, const CancelToken* cancel) const {
  PlanRun request;
  request.plan = build.runnable;
  request.output_shapes = settings.output_shapes;
  if (settings.timeout_s > 0) request.timeout_s = settings.timeout_s;
  if (settings.round) {  // event-timed runs are precise: a round is a short batch of them
    request.outputs = false;
    request.warmup = 2;
    request.runs = 15;
  } else {  // the check: the outputs, timed once
    request.warmup = 0;
    request.runs = 1;
  }
  return run_plan(runner, request, cancel);
}

std::string CudaBackend::serve(WorkerCall& call) const { return serve_plan(call); }

const CostRules& CudaBackend::cost_rules() const {
  static const CudaCostRules rules;
  return rules;
}

std::string CudaBackend::features_text(const TargetDescription& target) const {
  const GpuFeatures& f = gpu_features(target);
  return feature_words({{"arch", f.arch.empty() ? "-" : f.arch}, {"tensor_peak_gflops", number_text(f.tensor_peak_gflops)}});
}

void CudaBackend::read_features(std::string_view text, TargetDescription& target) const {
  GpuFeatures& f = gpu_features(target);
  for (const auto& [key, value] : parse_feature_words(text)) {
    if (key == "arch") f.arch = value == "-" ? "" : value;
    else if (key == "tensor_peak_gflops") f.tensor_peak_gflops = parse_number(value, key);
    else throw Error(Error::Kind::InvalidArgument, "the cuda target has no feature '" + key + "'");
  }
}

Tolerance CudaBackend::tolerance(DType dtype) const {
  const double tol = dtype == DType::F16 ? 1e-2 : dtype == DType::BF16 ? 5e-2 : 1e-3;
  return {tol, tol};
}

// An export runs its plan from a host launcher (export.h).
std::string CudaBackend::export_source(const Build& generated, const std::string& symbol) const {
  return cuda::export_source(generated.source, parse_plan(generated.launch), symbol);
}

std::string CudaBackend::header_declarations(const std::string& guard, const std::string& symbol) const {
  return export_declarations(guard, symbol);
}

// The plan with its PTX, as compile() makes it for the runner, in a file named by its content
// under the cache's plans/: what libprism_cuda_plan loads (cuda_plan/plan_library.h).
std::string CudaBackend::library(const Build& generated, const TargetDescription& target, const CompileSettings& settings) const {
  std::vector<Build> builds{generated};
  compile(builds, target, settings);
  if (!builds[0].error.empty()) throw Error(Error::Kind::Failed, builds[0].error);
  const std::string dir = (settings.cache_dir.empty() ? prism_cache_dir("kernels") : settings.cache_dir) + "/plans";
  if (std::string problem = ensure_private_dir(dir); !problem.empty()) throw Error(Error::Kind::Failed, problem);
  const std::string path = dir + "/" + content_key(builds[0].runnable, "plan") + ".plan";
  // Sealed as the kernel cache's entries are: a caller reads it only when its checksum matches.
  std::string problem = write_seal(path, builds[0].runnable);
  if (problem.empty()) problem = write_file_atomically(path, builds[0].runnable);
  if (!problem.empty()) throw Error(Error::Kind::Failed, problem);
  return path;
}

}  // namespace prism::backend::cuda
