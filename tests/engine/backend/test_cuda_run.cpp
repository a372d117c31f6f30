// CUDA runs in the worker process (cuda/run_worker.h). Without a device the run fails in
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
#include "engine/backend/cuda/plan.h"
#include "engine/backend/cuda/ticket.h"
#include "engine/backend/cuda/run_worker.h"
#include "engine/backend/lower.h"
#include "engine/sgraph/evaluate.h"
#include "engine/sgraph/parse.h"
#include "../sgraph/sgraph_helpers.h"
#include "../sgraph/families.h"
#include "engine/interp/interpreter.h"
#include "engine/tune/compare.h"

using namespace prism;

namespace {

// A candidate's plan run `runs` times in the worker on the device, on seeded inputs: its outputs
// match the evaluator's within `tol` of each and of the largest.
void check_on_device(const sgraph::Instance& inst, const backend::cuda::CudaSource& source, backend::cuda::CudaPlan plan, int runs,
                     uint64_t seed, double tol) {
  std::map<std::string, Tensor> named = test::random_inputs(inst.graph, inst.bindings, seed);
  std::vector<Tensor> inputs;
  for (const sgraph::TensorDecl& in : inst.graph.inputs) inputs.push_back(named.at(in.name));
  std::vector<Tensor> want = sgraph::evaluate(inst, named);
  plan.ptx = backend::cuda::compile_to_ptx(source.source, backend::cuda::CudaDevice().info().arch()).ptx;
  backend::cuda::PlanRun request;
  for (const auto& t : want) request.output_shapes.push_back(t.shape);
  request.plan = backend::cuda::plan_text(plan);
  request.runs = runs;
  backend::KernelRunner runner;
  runner.set_inputs(inputs);
  backend::RunOutcome outcome = backend::cuda::run_plan(runner, request);
  INFO(outcome.error);
  REQUIRE(outcome.ok);
  double scale = 1;
  for (const Tensor& t : want)
    for (float x : t.data) scale = std::max(scale, double(std::abs(x)));
  tune::Comparison check = tune::compare_outputs(outcome.outputs, want, tol, tol * scale);
  INFO(check.failure.value_or(""));
  CHECK_FALSE(check.failure);
}

}  // namespace

TEST_CASE("cuda run: the eager baseline runs in the worker, or the run says why not", "[cuda][runner]") {
  Program p = test::lowered_example("rms_linear");
  DimBindings dims{{"n", 8}, {"d", 256}};
  backend::cuda::CudaEager eager = backend::cuda::generate_cuda_eager(p, dims);
  std::map<std::string, Tensor> named;
  std::vector<Tensor> inputs = random_inputs(p, dims, 7, &named);
  std::vector<Tensor> reference = interpret(p, dims, named);
  backend::cuda::PlanRun request;
  for (const auto& t : reference) request.output_shapes.push_back(t.shape);
  request.runs = 5;

  backend::cuda::CudaStatus device = backend::cuda::cuda_status();
  backend::cuda::NvrtcStatus nvrtc = backend::cuda::nvrtc_status();
  backend::KernelRunner runner;
  runner.set_inputs(inputs);
  if (!device.available || !nvrtc.available) {
    eager.plan.ptx = "// no PTX: nothing can load it here\n";
    request.plan = backend::cuda::plan_text(eager.plan);
    backend::RunOutcome outcome = backend::cuda::run_plan(runner, request);
    CHECK_FALSE(outcome.ok);
    if (!device.available) CHECK_THAT(outcome.error, Catch::Contains(device.detail));
    WARN("skipped the GPU run: " << (device.available ? nvrtc.detail : device.detail) << " (the worker answered: " << outcome.error << ")");
    return;
  }
  eager.plan.ptx = backend::cuda::compile_to_ptx(eager.source, backend::cuda::CudaDevice().info().arch()).ptx;
  request.plan = backend::cuda::plan_text(eager.plan);
  backend::RunOutcome outcome = backend::cuda::run_plan(runner, request);
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
  backend::cuda::PlanRun request;
  request.plan = backend::cuda::plan_text(plan);
  request.output_shapes = {{4}};
  backend::RunOutcome outcome = backend::cuda::run_plan(runner, request);
  CHECK_FALSE(outcome.ok);
  CHECK_THAT(outcome.error, Catch::Contains("the plan has 2 inputs, the worker holds 1"));
  // The worker was restarted for the next run, which still answers.
  plan.inputs.pop_back();
  plan.inputs[0].elements = 5;
  request.plan = backend::cuda::plan_text(plan);
  outcome = backend::cuda::run_plan(runner, request);
  CHECK_THAT(outcome.error, Catch::Contains("input 0 (a) has 4 elements, the plan says 5"));
}

TEST_CASE("cuda run: a candidate's library matmuls run as cuBLAS calls where layouts and dtypes allow", "[cuda][runner][library]") {
  // An nn.Linear weight read transposed, a batch against one shared weight, a batch of
  // transposed keys, and mixed dtypes (left to the generated kernel).
  const std::string family = R"(input X: f32[n, d]
input W: f32[m, d]
input A: f16[b, n, d]
input B: f16[d, m]
input K: f16[b, m, d]
kernel 0: P: f32 = matmul(X, W view [1, 0])
kernel 1: Q: f16 = matmul(A, B)
kernel 2: R: f32 = matmul(A, K view [0, 2, 1])
kernel 3: S: f32 = matmul(X, B)
output P, Q, R, S
)";
  const DimBindings dims{{"n", 4}, {"d", 8}, {"m", 6}, {"b", 3}};
  const sgraph::Instance inst = sgraph::instantiate(sgraph::parse(family), dims, {}, sgraph::TileBudget{1 << 20});
  const backend::kir::Program lowered = backend::lower(inst, backend::cuda_lowering());
  const backend::cuda::CudaSource source = backend::cuda::generate_cuda_source(lowered);
  const backend::cuda::CudaPlan plan = backend::cuda::candidate_plan(inst, lowered, source);
  REQUIRE(plan.steps.size() == 4);
  auto gemm = [&](size_t i) {
    REQUIRE(plan.steps[i].is_gemm);
    return plan.steps[i].gemm;
  };
  const backend::cuda::CudaGemm p = gemm(0), q = gemm(1), r = gemm(2);
  CHECK((p.a == "X" && p.b == "W" && p.c == "P" && p.m == 4 && p.n == 6 && p.k == 8 && p.batch == 1 && !p.trans_a && p.trans_b));
  CHECK((q.batch == 3 && q.stride_a == 32 && q.stride_b == 0 && q.stride_c == 24 && !q.trans_b));
  CHECK((r.b == "K" && r.batch == 3 && r.stride_b == 48 && r.trans_b && r.stride_c == 24));
  CHECK_FALSE(plan.steps[3].is_gemm);  // f32 @ f16: cuBLAS takes one dtype for both
  CHECK(plan.steps[3].kernel.name == source.kernels[3].name);
  CHECK(plan.uses_cublas());
  // The plan's text form carries the calls.
  const backend::cuda::CudaPlan back = backend::cuda::parse_plan(backend::cuda::plan_text(plan));
  CHECK(back.steps.size() == 4);
  CHECK((back.steps[2].is_gemm && back.steps[2].gemm.trans_b && back.steps[2].gemm.stride_b == 48));

  // With a device: the plan's outputs match the evaluator.
  if (!backend::cuda::cuda_status().available || !backend::cuda::nvrtc_status().available) return;
  check_on_device(inst, source, plan, 3, 5, 1e-2);
}

TEST_CASE("cuda run: each timed run starts with the L2 overwritten (twice its size), on a device", "[cuda][runner]") {
  backend::cuda::CudaStatus device = backend::cuda::cuda_status();
  if (!device.available) {
    WARN("skipped: " << device.detail);
    return;
  }
  backend::cuda::CudaDevice d;
  CHECK(d.info().l2_bytes > 0);  // an H100's 50 MiB
  d.flush_l2();
  d.flush_l2();  // the buffer is allocated once
  d.synchronize();
}

TEST_CASE("cuda run: a split-k kernel with its combining tail in one launch runs right on a device, launch after launch",
          "[cuda][runner][ticket]") {
  // Decode-sized: 16 column tiles of 4 k-splits, 16 groups; the worker's timed launches reuse the
  // counters, and it refuses a plan that leaves them nonzero.
  const sgraph::Instance inst = sgraph::instantiate(sgraph::parse(test::families::kGatedMlpSplitK), {{"n", 8}, {"d", 1024}},
                                                    {{"g1", 4}, {"g2", 16}, {"F1", 4}, {"g3", 16}, {"F2", 1}}, sgraph::TileBudget{200 * 1024});
  const backend::kir::Program lowered = backend::lower(inst, backend::cuda_lowering());
  const backend::cuda::CudaSource source = backend::cuda::generate_cuda_source(lowered);
  backend::cuda::CudaPlan plan = backend::cuda::candidate_plan(inst, lowered, source);
  REQUIRE(plan.steps.size() == 1);
  REQUIRE(plan.scratch.back().zeroed);
  if (!backend::cuda::cuda_status().available || !backend::cuda::nvrtc_status().available) return;
  check_on_device(inst, source, plan, 20, 11, 1e-2);
}

TEST_CASE("cuda run: a tail that waits for the first kernel's blocks in one launch runs right on a device, launch after launch",
          "[cuda][runner][ticket]") {
  // One group (every combining block reads every partial): 16 x 4 blocks of the split-k kernel,
  // then one combining block that waits for them (ticket.h, waits_in_launch); the worker's timed
  // launches reuse the two counters, and it refuses a plan that leaves them nonzero.
  const sgraph::Instance inst = sgraph::instantiate(sgraph::parse(test::families::kGatedMlpSplitK), {{"n", 8}, {"d", 512}},
                                                    {{"g1", 4}, {"g2", 16}, {"F1", 4}, {"g3", 1}, {"F2", 4}}, sgraph::TileBudget{200 * 1024});
  const backend::kir::Program lowered = backend::lower(inst, backend::cuda_lowering());
  REQUIRE(backend::cuda::waits_in_launch(lowered, 0));
  const backend::cuda::CudaSource source = backend::cuda::generate_cuda_source(lowered);
  backend::cuda::CudaPlan plan = backend::cuda::candidate_plan(inst, lowered, source);
  REQUIRE(plan.steps.size() == 1);
  REQUIRE(plan.scratch.back().zeroed);
  CHECK(plan.scratch.back().elements == 2);
  if (!backend::cuda::cuda_status().available || !backend::cuda::nvrtc_status().available) return;
  check_on_device(inst, source, plan, 20, 11, 1e-2);
}
