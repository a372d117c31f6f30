// Tuning on the GPU (tune_families with the CUDA backend, through Workspace::tune). Without a
// device the workspace refuses target cuda with InvalidArgument saying why, and the tuner's own
// runs fail in words; with one, a small tune finds a candidate that passes its check beside the cuBLAS
// baseline. GPU-only parts warn and return here.
#include <catch2/catch.hpp>

#include "../search/search_helpers.h"
#include "engine/backend/cuda/gpu_features.h"
#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/nvrtc.h"
#include "engine/error.h"
#include "engine/backend/cuda/describe.h"
#include "engine/backend/target.h"
#include "engine/tune/backends.h"
#include "engine/tune/tuner.h"
#include "engine/workspace/workspace.h"
#include "support/subprocess.h"

using namespace prism;

TEST_CASE("tuner cuda: target cuda without a device is refused in words", "[tune][cuda]") {
  backend::cuda::CudaStatus device = backend::cuda::cuda_status();
  if (device.available && backend::cuda::nvrtc_status().available) {
    WARN("skipped: this machine has a CUDA device (" << device.detail << ")");
    return;
  }
  test::TempDir data;
  Workspace ws;
  ws.set_storage(data.path(), data.path());
  ws.open("a.prism", test::read_example("rms_linear"), 1);
  tune::TuneRequest request;
  request.target = backend::cuda::kTarget;
  request.bindings = {{"n", 4}, {"d", 64}};
  try {
    ws.tune("rms_linear", request);
    FAIL("tune --target cuda succeeded without a device");
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("target 'cuda' is not available"));
    if (!device.available) CHECK_THAT(e.what(), Catch::Contains(device.detail));
  }
  if (!device.available) CHECK_THROWS_WITH(backend::cuda::describe_cuda_device(), Catch::Contains(device.detail));
}

TEST_CASE("tuner cuda: a small tune runs the baseline and the candidates in the worker", "[tune][cuda]") {
  backend::cuda::CudaStatus device = backend::cuda::cuda_status();
  backend::cuda::NvrtcStatus nvrtc = backend::cuda::nvrtc_status();
  if (!nvrtc.available) {
    WARN("skipped: " << nvrtc.detail);
    return;
  }
  Program p = test::lowered_example("rms_linear");
  SearchLimits limits;
  limits.threads = 2;
  limits.fast_memory_bytes = kGpuOptInSharedBytes;
  limits.budget_s = 5;
  SearchResult found = search::search_program(p, limits);
  REQUIRE_FALSE(found.candidates.empty());
  tune::TuneRequest request;
  request.target = backend::cuda::kTarget;
  request.bindings = {{"n", 8}, {"d", 256}};
  request.top = 3;
  test::TempDir cache;
  tune::TuneEnvironment env;
  const backend::Backend& cuda = tune::backend_for(backend::cuda::kTarget);
  env.target = cuda.describe(cache.path());
  if (!device.available) CHECK(env.target.model == backend::cuda::cuda_h100_data().model);
  env.kernel_cache_dir = cache.path();
  tune::TuneResult r = tune::tune_families(cuda, p, found.candidates, request, env);
  CHECK(r.target == backend::cuda::kTarget);
  CHECK(r.threads == 128);
  // The three chosen at 128 threads per block, then the cheapest two at 256 and 512, then two
  // ranked on half an SM's shared memory at 2 blocks an SM (tuner_steps.h).
  REQUIRE(r.rows.size() == 9);
  std::vector<int> by_default;  // cost ranks
  std::set<std::pair<int, int64_t>> others;  // (cost rank, threads)
  std::vector<tune::TuneRow> two_blocks;
  for (const auto& row : r.rows) {
    const int64_t threads = row.schedule.at("threads");
    if (row.schedule.count("blocks_per_sm")) two_blocks.push_back(row);
    else if (threads == 128) by_default.push_back(row.cost_rank);
    else others.emplace(row.cost_rank, threads);
  }
  REQUIRE(by_default.size() == 3);
  std::sort(by_default.begin(), by_default.end());
  CHECK(others == std::set<std::pair<int, int64_t>>{{by_default[0], 256}, {by_default[0], 512}, {by_default[1], 256}, {by_default[1], 512}});
  REQUIRE(two_blocks.size() == 2);
  for (const tune::TuneRow& row : two_blocks) {
    CHECK(row.schedule == backend::Schedule{{"threads", 256}, {"blocks_per_sm", 2}});
    CHECK(row.cost_rank >= 1);  // its rank on the half
  }
  CHECK(r.stats.compiled + r.stats.cached == 10);  // the baseline and nine builds compiled to PTX
  CHECK(r.roofline_ms > 0);
  if (!device.available) {
    // Everything compiled; every run fails saying there is no device.
    CHECK_THAT(r.baseline_error, Catch::Contains(device.detail));
    for (const auto& row : r.rows) CHECK_THAT(row.error, Catch::Contains(device.detail));
    CHECK(r.best < 0);
    WARN("skipped the GPU runs: " << device.detail);
    return;
  }
  INFO(r.baseline_error);
  CHECK(r.baseline_ms > 0);
  REQUIRE(r.best == 0);
  CHECK(r.rows[0].ok);
  CHECK(r.best_ms > 0);
  CHECK(r.speedup > 0);
}
