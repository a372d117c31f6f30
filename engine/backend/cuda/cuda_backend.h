// A GPU as a backend (backend.h): the device the driver finds (described by describe.h; an
// H100's data sheet where there is none, for generating code without one); tensors stored at
// their declared dtypes; candidates printed by codegen.h and the eager baseline by eager.h,
// compiled to PTX by NVRTC (nvrtc.h) and run as CUDA plans (plan.h) by the kernel runner's worker.
#pragma once
#include "engine/backend/backend.h"
#include "engine/backend/cuda/codegen.h"
#include "engine/backend/cuda/gpu_features.h"

namespace prism::backend::cuda {

class CudaBackend final : public Backend {
 public:
  static constexpr int kThreadsPerBlock = 128;

  explicit CudaBackend(Target target = kTarget) : Backend(target) {}
  const char* name() const override { return "cuda"; }
  Presentation presentation() const override { return {"the GPU", "threads per block by default", "cuda", "cuda-plan"}; }
  Availability availability() const override;
  TargetDescription describe(const std::string& cache_dir) const override;
  int threads(int requested, const TargetDescription& target) const override;
  Program stored(const Program& lowered) const override { return lowered; }
  sgraph::SGraph stored(const sgraph::SGraph& family) const override { return family; }
  // threads=128 (the default), 256 and 512 threads per block, and 256 threads with shared memory
  // for 2 blocks an SM (blocks_per_sm=2) (docs/tuning.md, "Schedules").
  std::vector<Schedule> schedules(const TargetDescription& target) const override;
  // blocks_per_sm=B: each block's shared memory the SM's over B, less the 1 KiB the system keeps
  // for each; B times the SMs' blocks at once.
  std::optional<TargetDescription> scheduled_target(const Schedule& schedule, const TargetDescription& target) const override;
  // How `schedule` (empty: the default) prints an instance's kernels on `target`.
  CudaCodegenOptions codegen_options(const TargetDescription& target, const Schedule& schedule) const;
  Build generate(const sgraph::Instance& instance, const TargetDescription& target, const Schedule& schedule) const override;
  Build eager(const Program& stored, const DimBindings& dims) const override;
  void compile(std::vector<Build>& builds, const TargetDescription& target, const CompileSettings& settings) const override;
  RunOutcome run(KernelRunner& runner, const Build& build, const RunSettings& settings, const CancelToken* cancel) const override;
  std::string serve(WorkerCall& call) const override;
  kir::Program kernel_ir(const sgraph::Instance& instance, const TargetDescription& target, const Schedule& schedule) const override;
  // Relative to the output's largest value: f16 1e-2, bf16 5e-2, f32 1e-3.
  Tolerance tolerance(DType dtype) const override;
  const CostRules& cost_rules() const override;
  // "arch=compute_90 tensor_peak_gflops=989000" (gpu_features.h).
  std::string features_text(const TargetDescription& target) const override;
  void read_features(std::string_view text, TargetDescription& target) const override;
  std::string export_source(const Build& generated, const std::string& symbol) const override;
  std::string library(const Build& generated, const TargetDescription& target, const CompileSettings& settings) const override;
  std::string header_declarations(const std::string& guard, const std::string& symbol) const override;
};

}  // namespace prism::backend::cuda
