// The CPU as a backend (backend.h): this machine's cores, measured once; tensors stored at their
// declared dtypes (16-bit ones widened to f32 as kernels load them); candidates printed by codegen.h and the eager baseline by eager.h, compiled by the host
// compiler into shared objects (compiler.h) and run by the kernel runner's worker on `threads`
// OpenMP threads.
#pragma once
#include "engine/backend/backend.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cpu/cpu_features.h"

namespace prism::backend::cpu {

// How the backend compiles a generated library for `target` (what a tool that builds one itself
// must use too, so it times the code the tuner times): OpenBLAS linked as eager_libs() says, the
// disabled and emulated CPU features, and vdpbf16ps only where it beats widening.
CompileOptions kernel_compile_options(const TargetDescription& target, const std::string& cache_dir = "");

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(Target target = kTarget) : Backend(target) {}
  const char* name() const override { return "cpu"; }
  Presentation presentation() const override { return {"the CPU", "threads", "cpu", "c-abi"}; }
  Availability availability() const override;
  TargetDescription describe(const std::string& cache_dir) const override;
  int threads(int requested, const TargetDescription& target) const override;
  Program stored(const Program& lowered) const override;
  sgraph::SGraph stored(const sgraph::SGraph& family) const override;
  // The CPU has one schedule (threads are the request's): `schedule` must be empty.
  Build generate(const sgraph::Instance& instance, const TargetDescription& target, const Schedule& schedule) const override;
  Build eager(const Program& stored, const DimBindings& dims) const override;
  Build fault(const std::string& kind) const override;
  void compile(std::vector<Build>& builds, const TargetDescription& target, const CompileSettings& settings) const override;
  RunOutcome run(KernelRunner& runner, const Build& build, const RunSettings& settings, const CancelToken* cancel) const override;
  std::string serve(WorkerCall& call) const override;
  kir::Program kernel_ir(const sgraph::Instance& instance, const TargetDescription& target, const Schedule& schedule) const override;
  Tolerance tolerance(DType dtype) const override;
  const CostRules& cost_rules() const override;
  // CpuFeatures' fields, each as "name=value" (cpu_features.h).
  std::string features_text(const TargetDescription& target) const override;
  void read_features(std::string_view text, TargetDescription& target) const override;
  std::string export_source(const Build& generated, const std::string& symbol) const override;
  std::string header_declarations(const std::string& guard, const std::string& symbol) const override;
  std::string library(const Build& generated, const TargetDescription& target, const CompileSettings& settings) const override;
};

}  // namespace prism::backend::cpu
