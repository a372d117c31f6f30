// A backend the tests register (docs/architecture.md, "Adding a backend"): one registration line,
// and the tuner, the cost model, the roofline, the tuning DB and the workspace reach it by its
// target alone. It runs the CPU's code under another name, on a machine description of its own,
// with cost rules that count the questions they are asked.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/error.h"
#include "engine/tune/backends.h"
#include "engine/tune/cost_model.h"
#include "engine/workspace/workspace.h"
#include "support/scoped_env.h"
#include "support/subprocess.h"

using namespace prism;
using backend::Target;

namespace {

// Answers as the CPU does, and counts the questions.
class CountingRules final : public backend::CostRules {
 public:
  explicit CountingRules(const backend::CostRules& cpu) : cpu_(cpu) {}
  mutable std::atomic<int> lanes_asked{0}, peaks_asked{0}, matmuls_asked{0};

  int vector_lanes(const backend::TargetDescription& t) const override {
    ++lanes_asked;
    return cpu_.vector_lanes(t);
  }
  double block_matmul_factor(const backend::BlockMatmul& m, const backend::TargetDescription& t) const override {
    ++matmuls_asked;
    return cpu_.block_matmul_factor(m, t);
  }
  int64_t b_row_piece(const backend::BlockMatmul& m, const backend::TargetDescription& t) const override { return cpu_.b_row_piece(m, t); }
  int64_t private_cache_bytes(const backend::TargetDescription& t) const override { return cpu_.private_cache_bytes(t); }
  double overlap_loss() const override { return cpu_.overlap_loss(); }
  backend::LibraryMatmulCost library_matmul(const backend::LibraryMatmul& m, const backend::TargetDescription& t) const override {
    return cpu_.library_matmul(m, t);
  }
  double peak_gflops(DType storage, const backend::TargetDescription& t) const override {
    ++peaks_asked;
    return cpu_.peak_gflops(storage, t);
  }

 private:
  const backend::CostRules& cpu_;
};

class FakeBackend final : public backend::Backend {
 public:
  explicit FakeBackend(Target target) : Backend(target), cpu_(target), rules_(cpu_.cost_rules()) {}
  const char* name() const override { return "fake"; }
  Availability availability() const override { return {true, "a test's backend"}; }
  backend::TargetDescription describe(const std::string& cache_dir) const override {
    backend::TargetDescription t = cpu_.describe(cache_dir);
    t.model = "fake machine (" + t.model + ")";
    return t;
  }
  int threads(int requested, const backend::TargetDescription& t) const override { return cpu_.threads(requested, t); }
  Program stored(const Program& lowered) const override { return cpu_.stored(lowered); }
  sgraph::SGraph stored(const sgraph::SGraph& family) const override { return cpu_.stored(family); }
  backend::Build generate(const sgraph::Instance& instance, const backend::TargetDescription& t, const backend::Schedule& s) const override {
    return cpu_.generate(instance, t, s);
  }
  backend::Build eager(const Program& stored, const DimBindings& dims) const override { return cpu_.eager(stored, dims); }
  void compile(std::vector<backend::Build>& builds, const backend::TargetDescription& t, const backend::CompileSettings& s) const override {
    cpu_.compile(builds, t, s);
  }
  backend::RunOutcome run(backend::KernelRunner& runner, const backend::Build& build, const backend::RunSettings& settings,
                          const CancelToken* cancel) const override {
    return cpu_.run(runner, build, settings, cancel);
  }
  backend::Tolerance tolerance(DType dtype) const override { return cpu_.tolerance(dtype); }
  const backend::CostRules& cost_rules() const override { return rules_; }
  const CountingRules& counting() const { return rules_; }

 private:
  backend::cpu::CpuBackend cpu_;
  CountingRules rules_;
};

// The one registration line, done once in the test process.
Target fake_target() {
  static const Target target = tune::register_backend([](Target t) { return std::make_unique<FakeBackend>(t); });
  return target;
}

const FakeBackend& fake() { return dynamic_cast<const FakeBackend&>(tune::backend_for(fake_target())); }

}  // namespace

TEST_CASE("a registered backend is named, parsed and listed like the built-in ones", "[tune][target][registry]") {
  const Target t = fake_target();
  CHECK(t != Target::Cpu);
  CHECK(t != Target::Cuda);
  CHECK(tune::target_name(t) == std::string("fake"));
  CHECK(tune::parse_target("fake") == t);
  CHECK_THAT(tune::target_names(), Catch::EndsWith(", fake"));
  const std::vector<Target> all = tune::registered_targets();
  CHECK(std::find(all.begin(), all.end(), t) != all.end());
  // A second backend of the same name, or one that will not take the target it is given.
  CHECK_THROWS_WITH(tune::register_backend([](Target t) { return std::make_unique<FakeBackend>(t); }),
                    Catch::Contains("'fake' is registered already"));
  CHECK_THROWS_WITH(tune::register_backend([](Target) { return std::make_unique<backend::cpu::CpuBackend>(Target::Cpu); }),
                    Catch::Contains("must take the target it is given"));
  CHECK_THROWS_WITH(tune::backend_for(Target(1000)), Catch::Contains("no backend has target 1000"));
}

TEST_CASE("the tuner, the cost model, the roofline and the workspace reach a registered backend by its target", "[tune][target][registry]") {
  const Target t = fake_target();
  test::ScopedEnv stored("PRISM_TUNE_NOISE_LIMIT", "off");  // every tune is stored: the DB answers the second
  test::TempDir data;
  Workspace ws;
  ws.set_storage(data.path(), data.path() + "/cache");
  const std::vector<tune::TargetStatus> targets = ws.targets();
  const auto listed = std::find_if(targets.begin(), targets.end(), [&](const tune::TargetStatus& s) { return s.target == t; });
  REQUIRE(listed != targets.end());
  CHECK(listed->available);

  ws.open("untitled:rms", test::read_example("rms_linear"), 1);
  const int lanes_before = fake().counting().lanes_asked, peaks_before = fake().counting().peaks_asked;
  tune::TuneRequest request;
  request.bindings = {{"n", 4}, {"d", 64}};
  request.top = 2;
  request.target = t;
  const tune::TuneResult r = ws.tune("rms_linear", request);
  CHECK(r.target == t);
  CHECK_THAT(r.target_model, Catch::StartsWith("fake machine ("));
  REQUIRE(r.best >= 0);
  CHECK(r.rows[size_t(r.best)].ok);
  CHECK(r.roofline_ms > 0);
  // The ranking asked the fake's rules, and the roofline its peak.
  CHECK(fake().counting().lanes_asked > lanes_before);
  CHECK(fake().counting().matmuls_asked > 0);
  CHECK(fake().counting().peaks_asked > peaks_before);

  // The source of its best, and the DB's answer under the fake's name.
  const tune::KernelSource k = ws.kernel_source("rms_linear", 0, request.bindings, t);
  CHECK(k.tuned);
  CHECK(k.target == t);
  CHECK(ws.tune("rms_linear", request).from_db);
}
