// CUDA runs in the worker process (KernelRunner::run_cuda). Without a device the run fails in
// words (the driver's reason) and the GPU part warns and returns; with one, the eager baseline
// of an example (kernels and cuBLAS) matches the reference interpreter at f16 tolerances.
#include <catch2/catch.hpp>

#include <cmath>

#include "../interp_helpers.h"
#include "../search/search_helpers.h"
#include "engine/backend/runner/runner.h"
#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/eager.h"
#include "engine/backend/cuda/nvrtc.h"
#include "engine/interp/interpreter.h"
#include "engine/tune/compare.h"

using namespace prism;

TEST_CASE("cuda run: the eager baseline runs in the worker, or the run says why not", "[cuda][runner]") {
  Program p = test::lowered_example("rms_linear");
  DimBindings dims{{"n", 8}, {"d", 256}};
  backend::cuda::CudaEager eager = backend::cuda::generate_cuda_eager(p, dims);
  std::map<std::string, Tensor> named;
  std::vector<Tensor> inputs = random_inputs(p, dims, 7, &named);
  std::vector<Tensor> reference = interpret(p, dims, named);
  backend::CudaRunRequest request;
  for (const auto& t : reference) request.output_shapes.push_back(t.shape);
  request.runs = 5;

  backend::cuda::CudaStatus device = backend::cuda::cuda_status();
  backend::cuda::NvrtcStatus nvrtc = backend::cuda::nvrtc_status();
  backend::KernelRunner runner;
  runner.set_inputs(inputs);
  if (!device.available || !nvrtc.available) {
    eager.plan.ptx = "// no PTX: nothing can load it here\n";
    request.plan = backend::cuda::plan_text(eager.plan);
    backend::RunOutcome outcome = runner.run_cuda(request);
    CHECK_FALSE(outcome.ok);
    if (!device.available) CHECK_THAT(outcome.error, Catch::Contains(device.detail));
    WARN("skipped the GPU run: " << (device.available ? nvrtc.detail : device.detail) << " (the worker answered: " << outcome.error << ")");
    return;
  }
  eager.plan.ptx = backend::cuda::compile_to_ptx(eager.source, backend::cuda::CudaDevice().info().arch()).ptx;
  request.plan = backend::cuda::plan_text(eager.plan);
  backend::RunOutcome outcome = runner.run_cuda(request);
  INFO(outcome.error);
  REQUIRE(outcome.ok);
  CHECK(outcome.runs == 5);
  CHECK(outcome.median_ms > 0);
  double scale = 0;
  for (const auto& t : reference)
    for (float x : t.data) scale = std::max(scale, double(std::abs(x)));
  tune::Comparison check = tune::compare_outputs(outcome.outputs, reference, 1e-2, 1e-2 * scale);
  INFO(check.failure.value_or(""));
  CHECK_FALSE(check.failure);
}

TEST_CASE("cuda run: a plan that does not match the worker's inputs is refused in words, before any device is used", "[cuda][runner]") {
  backend::KernelRunner runner;
  runner.set_inputs({Tensor::zeros(DType::F32, {4})});
  backend::cuda::CudaPlan plan;
  plan.inputs = {{"a", 4, DType::F16}, {"b", 4, DType::F16}};
  plan.outputs = {{"c", 4, DType::F16}};
  plan.ptx = "// none\n";
  backend::CudaRunRequest request;
  request.plan = backend::cuda::plan_text(plan);
  request.output_shapes = {{4}};
  backend::RunOutcome outcome = runner.run_cuda(request);
  CHECK_FALSE(outcome.ok);
  CHECK_THAT(outcome.error, Catch::Contains("the plan has 2 inputs, the worker holds 1"));
  // The worker was restarted for the next run, which still answers.
  plan.inputs.pop_back();
  plan.inputs[0].elements = 5;
  request.plan = backend::cuda::plan_text(plan);
  outcome = runner.run_cuda(request);
  CHECK_THAT(outcome.error, Catch::Contains("input 0 (a) has 4 elements, the plan says 5"));
}
