// The scalar backend: a backend of the tests' own (docs/architecture.md, "Adding a backend"), which
// shows what adding one takes and checks that nothing outside a backend's folder knows which
// backends there are. It prints every kernel as plain C++ loops for one thread (printing.h),
// compiles them with the host compiler, and runs them through its own worker half; its machine is
// a data sheet of its own and its cost rules count the questions they are asked.
//
// Registered in one line (register_scalar_backend). The tests register it in their own process;
// prismd-scalar and prism-runner-scalar (this folder's CMakeLists.txt) are prismd and prism-runner
// with it registered, for the REPL's and the Python package's tests.
#pragma once
#include <atomic>
#include <memory>

#include "engine/backend/backend.h"
#include "engine/tune/backends.h"

namespace prism::test::scalar {

// Scalar code: one lane, the data sheet's peak; the rest is CostRules' "nothing special".
class ScalarRules final : public backend::CostRules {
 public:
  mutable std::atomic<int> lanes_asked{0}, peaks_asked{0};
  int vector_lanes(const backend::TargetDescription&) const override {
    ++lanes_asked;
    return 1;
  }
  double peak_gflops(DType, const backend::TargetDescription& target) const override {
    ++peaks_asked;
    return target.peak_gflops;
  }
};

class ScalarBackend final : public backend::Backend {
 public:
  explicit ScalarBackend(backend::Target target) : Backend(target) {}
  const char* name() const override { return "scalar"; }
  Presentation presentation() const override { return {"the scalar test machine", "thread (it has one)", "cpu", "c-abi"}; }
  Availability availability() const override;
  backend::TargetDescription describe(const std::string& cache_dir) const override;
  int threads(int, const backend::TargetDescription&) const override { return 1; }
  Program stored(const Program& lowered) const override { return lowered; }
  sgraph::SGraph stored(const sgraph::SGraph& family) const override { return family; }
  backend::Build generate(const sgraph::Instance& instance, const backend::TargetDescription& target,
                          const backend::Schedule& schedule) const override;
  backend::Build eager(const Program& stored, const DimBindings& dims) const override;
  void compile(std::vector<backend::Build>& builds, const backend::TargetDescription& target,
               const backend::CompileSettings& settings) const override;
  backend::RunOutcome run(backend::KernelRunner& runner, const backend::Build& build, const backend::RunSettings& settings,
                          const CancelToken* cancel) const override;
  std::string serve(backend::WorkerCall& call) const override;  // worker.cpp
  backend::Tolerance tolerance(DType dtype) const override;
  const backend::CostRules& cost_rules() const override { return rules_; }
  std::string library(const backend::Build& generated, const backend::TargetDescription& target,
                      const backend::CompileSettings& settings) const override;
  const ScalarRules& rules() const { return rules_; }

 private:
  ScalarRules rules_;
};

// The one registration line; the backend is listed while the result lives.
inline tune::Registration register_scalar_backend() {
  return tune::register_backend([](backend::Target t) { return std::make_unique<ScalarBackend>(t); });
}

}  // namespace prism::test::scalar
