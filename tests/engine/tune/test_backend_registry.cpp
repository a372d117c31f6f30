// A backend of the tests' own (tests/backends/scalar; docs/architecture.md, "Adding a backend"):
// registered in one line, it is named, parsed and listed like the built-in ones, tuned through a
// prism-runner whose worker serves it, ranked by its own cost rules, stored in and answered from
// the tuning DB, and gone when its registration ends.
#include <catch2/catch.hpp>

#include <algorithm>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/error.h"
#include "engine/tune/backends.h"
#include "engine/workspace/workspace.h"
#include "support/scoped_env.h"
#include "support/subprocess.h"
#include "tests/backends/scalar/scalar_backend.h"

using namespace prism;
using backend::Target;

namespace {

const test::scalar::ScalarBackend& scalar(Target t) { return dynamic_cast<const test::scalar::ScalarBackend&>(tune::backend_for(t)); }

bool listed(Target t) {
  const std::vector<Target> all = tune::registered_targets();
  return std::find(all.begin(), all.end(), t) != all.end();
}

}  // namespace

TEST_CASE("the built-in backends hold the targets their folders name", "[tune][target][registry]") {
  CHECK(tune::parse_target("cpu") == backend::cpu::kTarget);
  CHECK(tune::parse_target("cuda") == backend::cuda::kTarget);
  CHECK(backend::cpu::kTarget == Target{});  // what a request that names no target runs on
}

TEST_CASE("a registered backend is named, parsed and listed like the built-in ones, and gone when its registration ends",
          "[tune][target][registry]") {
  Target t{};
  {
    const tune::Registration registration = test::scalar::register_scalar_backend();
    t = registration.target();
    CHECK(t != backend::cpu::kTarget);
    CHECK(t != backend::cuda::kTarget);
    CHECK(tune::target_name(t) == std::string("scalar"));
    CHECK(tune::parse_target("scalar") == t);
    CHECK_THAT(tune::target_names(), Catch::EndsWith(", scalar"));
    CHECK(listed(t));
    CHECK(tune::backend_for(t).presentation().machine == "the scalar test machine");
    // A second backend of the same name, or one that will not take the target it is given.
    CHECK_THROWS_WITH(test::scalar::register_scalar_backend(), Catch::Contains("'scalar' is registered already"));
    CHECK_THROWS_WITH(tune::register_backend([](Target) { return std::make_unique<backend::cpu::CpuBackend>(backend::cpu::kTarget); }),
                      Catch::Contains("must take the target it is given"));
  }
  CHECK_FALSE(tune::parse_target("scalar"));
  CHECK_FALSE(listed(t));
  CHECK_THROWS_WITH(tune::backend_for(t), Catch::Contains("no backend has target " + std::to_string(int(t))));
  CHECK_THAT(tune::target_names(), !Catch::Contains("scalar"));
  // Registered again, it is another target: a target never names two backends.
  const tune::Registration again = test::scalar::register_scalar_backend();
  CHECK(again.target() != t);
  CHECK(tune::parse_target("scalar") == again.target());
}

TEST_CASE("a run goes to the worker half of its backend: a prism-runner without the scalar backend says so", "[tune][registry][runner]") {
  const tune::Registration registration = test::scalar::register_scalar_backend();
  backend::WorkerRun run;
  run.backend = "scalar";
  run.arguments = "0 1 - -\t/nowhere/library.so";
  run.output_shapes = {{4}};
  backend::KernelRunner plain(test::bin("prism-runner"));
  plain.set_inputs({Tensor::zeros(DType::F32, {4})});
  CHECK_THAT(plain.run(run).error, Catch::Contains("no backend is named 'scalar' (cpu, cuda)"));
  backend::KernelRunner with_scalar(test::bin("prism-runner-scalar"));
  with_scalar.set_inputs({Tensor::zeros(DType::F32, {4})});
  CHECK_THAT(with_scalar.run(run).error, Catch::Contains("/nowhere"));  // its worker half tried to load it
}

TEST_CASE("the scalar backend is tuned through prism-runner-scalar, ranked by its own rules and answered by the DB",
          "[tune][target][registry]") {
  const tune::Registration registration = test::scalar::register_scalar_backend();
  const Target t = registration.target();
  test::ScopedEnv runner("PRISM_RUNNER", test::bin("prism-runner-scalar"));
  test::ScopedEnv stored("PRISM_TUNE_NOISE_LIMIT", "off");  // every tune is stored: the DB answers the second
  test::TempDir data;
  Workspace ws;
  ws.set_storage(data.path(), data.path() + "/cache");
  const std::vector<tune::TargetStatus> targets = ws.targets();
  const auto status = std::find_if(targets.begin(), targets.end(), [&](const tune::TargetStatus& s) { return s.target == t; });
  REQUIRE(status != targets.end());
  CHECK(status->available);

  ws.open("untitled:rms", test::read_example("rms_linear"), 1);
  const int lanes_before = scalar(t).rules().lanes_asked, peaks_before = scalar(t).rules().peaks_asked;
  tune::TuneRequest request;
  request.bindings = {{"n", 4}, {"d", 64}};
  request.top = 2;
  request.target = t;
  const tune::TuneResult r = ws.tune("rms_linear", request);
  CHECK(r.target == t);
  CHECK(r.target_model == "scalar test machine (one thread, no vector units)");
  CHECK(r.threads == 1);
  REQUIRE(r.best >= 0);
  for (const auto& row : r.rows) {
    INFO(row.error);
    CHECK(row.ok);  // f16 in and out: the scalar printers round where the reference does
  }
  CHECK(r.baseline_ms > 0);
  CHECK(r.roofline_ms > 0);
  CHECK(scalar(t).rules().lanes_asked > lanes_before);
  CHECK(scalar(t).rules().peaks_asked > peaks_before);

  // Its best's source is the scalar printer's, and the DB answers under its name.
  const tune::KernelSource k = ws.kernel_source("rms_linear", 0, request.bindings, t);
  CHECK(k.tuned);
  CHECK(k.target == t);
  CHECK_THAT(k.source, Catch::Contains("prism_wide(") && !Catch::Contains("#pragma omp"));
  CHECK(ws.tune("rms_linear", request).from_db);
}
