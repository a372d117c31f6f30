#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cpu/describe.h"
#include "engine/backend/cpu/library_run.h"
#include "engine/backend/runner/runner.h"
#include "engine/error.h"
#include "support/subprocess.h"

using namespace prism;
using namespace prism::backend;
using namespace prism::backend::cpu;

namespace {

// Kernels with y = 2x over 4 floats, and planted failures.
std::string kernel(const std::string& body) {
  return R"(#include <csignal>
extern "C" char* openblas_get_corename(void);  // declared only: a kernel that asks links OpenBLAS
extern "C" const char* prism_error() { return "planted failure"; }
extern "C" int prism_entry(const float* const* in, float* const* out, int threads) {
  (void)threads;
)" + body + R"(
  for (int i = 0; i < 4; ++i) out[0][i] = 2 * in[0][i];
  return 0;
}
)";
}

struct RunnerFixture {
  test::TempDir dir;
  CompileOptions options;
  KernelRunner runner;
  RunnerFixture() {
    options.cache_dir = dir.path();
    Tensor x = Tensor::zeros(DType::F32, {4});
    x.data = {1, 2, 3, 4};
    runner.set_inputs({x});
  }
  RunOutcome run(const std::string& body, double timeout_s = 20) {
    LibraryRun request;
    request.library = compile_library(kernel(body), options).path;
    request.output_shapes = {{4}};
    request.timeout_s = timeout_s;
    request.min_time_s = 0;
    return run_library(runner, request);
  }
};

}  // namespace

TEST_CASE("runner: a kernel runs in the worker, its outputs come back and it is timed", "[backend][runner]") {
  RunnerFixture f;
  RunOutcome r = f.run("");
  INFO(r.error);
  REQUIRE(r.ok);
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].data == std::vector<float>{2, 4, 6, 8});
  CHECK(r.runs >= 5);
  CHECK(r.median_ms >= r.min_ms);
}

TEST_CASE("runner: a crashing kernel fails its run with the signal, and the next run works", "[backend][runner]") {
  RunnerFixture f;
  RunOutcome crash = f.run("  std::raise(SIGSEGV);");
  CHECK_FALSE(crash.ok);
  CHECK_THAT(crash.error, Catch::Contains("the kernel crashed (SIGSEGV"));
  RunOutcome abort = f.run("  if (in[0][0] == 1) __builtin_trap();");
  CHECK_FALSE(abort.ok);
  CHECK_THAT(abort.error, Catch::Contains("crashed (SIGILL"));
  RunOutcome fine = f.run("");
  INFO(fine.error);
  CHECK(fine.ok);
  CHECK(fine.outputs[0].data[3] == 8);
}

TEST_CASE("runner: a hanging kernel is killed at its time limit; an error return is reported", "[backend][runner]") {
  RunnerFixture f;
  RunOutcome hang = f.run("  for (volatile int spin = 0;; spin = spin + 1) {}", 1.0);
  CHECK_FALSE(hang.ok);
  CHECK_THAT(hang.error, Catch::Contains("did not finish within 1 s"));
  RunOutcome failed = f.run("  return 3;");
  CHECK_FALSE(failed.ok);
  CHECK(failed.error == "the kernel returned 3: planted failure");
  CHECK(f.run("").ok);
}

TEST_CASE("runner: cancelling a run kills the worker at once", "[backend][runner]") {
  RunnerFixture f;
  LibraryRun request;
  request.library = compile_library(kernel("  for (volatile int spin = 0;; spin = spin + 1) {}"), f.options).path;
  request.output_shapes = {{4}};
  CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel.cancel();
  });
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(run_library(f.runner, request, &cancel), Error);
  canceller.join();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(f.run("").ok);
}

TEST_CASE("runner: a missing library or runner binary is a clear error", "[backend][runner]") {
  RunnerFixture f;
  LibraryRun request;
  request.library = f.dir / "missing.so";
  request.output_shapes = {{4}};
  RunOutcome r = run_library(f.runner, request);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Catch::Contains("cannot load"));
  KernelRunner nowhere(f.dir / "no-runner");
  CHECK_THROWS_WITH(run_library(nowhere, request), Catch::Contains("cannot start the kernel runner"));
}

TEST_CASE("runner: a run goes to the worker half of the backend it names, and a name no backend has is an error", "[backend][runner]") {
  RunnerFixture f;
  WorkerRun run;
  run.backend = "nowhere";
  run.output_shapes = {{4}};
  RunOutcome r = f.runner.run(run);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Catch::Contains("no backend is named 'nowhere' (cpu, cuda"));
  run.backend = "cpu";
  run.arguments = "two threads";
  CHECK_THAT(f.runner.run(run).error, Catch::Contains("malformed cpu run 'two threads'"));
  CHECK(f.run("").ok);  // the worker still serves
}

TEST_CASE("runner: OpenBLAS in the worker runs the kernels of this CPU's instructions, not its SSE3 fallback", "[backend][runner]") {
  // Debian's OpenBLAS takes its SSE3 kernels ("Prescott") on a CPU model it does not know; the
  // worker names the kernel set by the CPU's instructions (describe.h) unless the user did (a
  // machine whose environment sets OPENBLAS_CORETYPE: then that one).
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  const char* expected = user && *user ? user : openblas_core_type();
  if (!expected) return;  // an x86-64 with neither AVX2 nor AVX-512: nothing to choose
  RunnerFixture f;
  f.options.libs = {"-lopenblas"};
  const std::string want = std::string("\"") + expected + "\"";
  RunOutcome r = f.run("  const char* core = openblas_get_corename();\n"
                       "  for (int i = 0; core[i] || " + want + "[i]; ++i)\n"
                       "    if ((core[i] | 32) != (" + want + "[i] | 32)) return 1;\n");
  INFO(r.error);
  CHECK(r.ok);
}
