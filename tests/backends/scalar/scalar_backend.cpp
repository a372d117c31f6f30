#include "tests/backends/scalar/scalar_backend.h"

#include <sstream>

#include "engine/backend/cpu/compiler.h"
#include "tests/backends/scalar/printing.h"
#include "tests/backends/scalar/worker.h"

namespace prism::test::scalar {

namespace {

// Plain C++ at -O1: no vector units asked for, and quick to compile.
backend::cpu::CompileOptions compile_options(const backend::CompileSettings& settings) {
  backend::cpu::CompileOptions options;
  options.cache_dir = settings.cache_dir;
  options.flags = {"-std=c++17", "-O1", "-fPIC", "-shared"};
  return options;
}

}  // namespace

backend::Backend::Availability ScalarBackend::availability() const {
  return {true, "plain C++ on one thread, compiled by " + backend::cpu::host_compiler_identity()};
}

backend::TargetDescription ScalarBackend::describe(const std::string&) const {
  backend::TargetDescription t;
  t.target = target();
  t.model = "scalar test machine (one thread, no vector units)";
  t.toolchain = backend::cpu::host_compiler_identity();
  t.cores = 1;
  t.l1_bytes = 32 << 10;
  t.l2_bytes = 1 << 20;
  t.bandwidth_gbs = 8;
  t.peak_gflops = 2;
  t.fast_memory_bytes = 256 << 10;
  return t;
}

backend::Build ScalarBackend::generate(const sgraph::Instance& instance, const backend::TargetDescription& target,
                                       const backend::Schedule& schedule) const {
  return backend::make_build("scalar codegen", [&](backend::Build& b) {
    if (!schedule.empty()) throw Error(Error::Kind::InvalidArgument, "the scalar backend has one schedule");
    b.source = kernels_source(kernel_ir(instance, target, schedule));
  });
}

backend::Build ScalarBackend::eager(const Program& stored, const DimBindings& dims) const {
  return backend::make_build("the eager baseline", [&](backend::Build& b) { b.source = eager_source(stored, dims); });
}

void ScalarBackend::compile(std::vector<backend::Build>& builds, const backend::TargetDescription&,
                            const backend::CompileSettings& settings) const {
  backend::cpu::compile_builds(builds, compile_options(settings), settings.parallel);
}

backend::RunOutcome ScalarBackend::run(backend::KernelRunner& runner, const backend::Build& build, const backend::RunSettings& settings,
                                       const CancelToken* cancel) const {
  backend::WorkerRun w;
  w.backend = name();
  w.arguments = worker_arguments(settings.round ? 1 : 0, settings.round ? 3 : 1, settings.input_dtypes, settings.output_dtypes, build.runnable);
  w.output_shapes = settings.output_shapes;
  w.outputs = !settings.round;
  if (settings.timeout_s > 0) w.timeout_s = settings.timeout_s;
  return runner.run(w, cancel);
}

backend::Tolerance ScalarBackend::tolerance(DType dtype) const {
  switch (dtype) {
    case DType::F16: return {1e-2, 1e-2};
    case DType::BF16: return {5e-2, 5e-2};
    case DType::F32: break;
  }
  return {1e-3, 1e-4};
}

std::string ScalarBackend::library(const backend::Build& generated, const backend::TargetDescription&,
                                   const backend::CompileSettings& settings) const {
  return backend::cpu::compiled_library(generated, compile_options(settings));
}

}  // namespace prism::test::scalar
