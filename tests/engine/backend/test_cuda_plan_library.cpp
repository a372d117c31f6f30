// libprism_cuda_plan (cuda_plan/plan_library.h): a plan refused in words without a device or when
// malformed; with a GPU (scripts/gpu_session.sh runs every [cuda] test), a tuned plan, a fused one
// and one with cuBLAS matmuls, run on device pointers to the reference interpreter's values.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cuda_plan/plan_library.h"
#include "device_call.h"
#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/gpu_features.h"
#include "engine/interp/interpreter.h"
#include "engine/workspace/workspace.h"
#include "support/subprocess.h"

using namespace prism;

namespace {

// The library's entry points, opened as prism.compile opens them (dlopen of build/lib's file).
struct PlanLibrary {
  void* handle = nullptr;
  decltype(&prism_plan_load) load = nullptr;
  decltype(&prism_plan_run) run = nullptr;
  decltype(&prism_plan_free) free = nullptr;
  decltype(&prism_plan_error) error = nullptr;

  PlanLibrary() {
    const std::string path = std::filesystem::path(test::bin("prism")).parent_path().parent_path() / "lib/libprism_cuda_plan.so";
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    load = reinterpret_cast<decltype(load)>(::dlsym(handle, "prism_plan_load"));
    run = reinterpret_cast<decltype(run)>(::dlsym(handle, "prism_plan_run"));
    free = reinterpret_cast<decltype(free)>(::dlsym(handle, "prism_plan_free"));
    error = reinterpret_cast<decltype(error)>(::dlsym(handle, "prism_plan_error"));
    REQUIRE((load && run && free && error));
  }
};

std::string read_layer(const std::string& name) {
  std::ifstream in(test::source("examples/layers/" + name + ".prism"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("cuda plan library: a malformed plan, or a plan without a device, is refused in words", "[cuda][plan-library]") {
  PlanLibrary lib;
  CHECK(lib.load("tensor input X twelve f32\n") == nullptr);
  CHECK_THAT(std::string(lib.error()), Catch::Contains("tensor input X twelve f32"));
  const backend::cuda::CudaStatus status = backend::cuda::cuda_status();
  if (status.available) return;
  // A well-formed plan (its PTX empty): the device is what is missing.
  CHECK(lib.load("tensor input X 4 f32\ntensor output Y 4 f32\nptx\n") == nullptr);
  CHECK_THAT(std::string(lib.error()), Catch::Contains(status.detail));
}

TEST_CASE("cuda plan library: on a GPU, tuned plans run on device pointers to the reference's values", "[cuda][plan-library]") {
  const backend::cuda::CudaStatus status = backend::cuda::cuda_status();
  if (!status.available) {
    WARN("skipped: " << status.detail);
    return;
  }
  PlanLibrary lib;
  test::TempDir data;
  Workspace ws;
  ws.set_storage(data.path(), data / "cache");
  ws.open("l.prism", read_layer("llama_rmsnorm_proj"), 1);
  const SearchResult found = ws.search("llama_rmsnorm_proj", SearchLimits{});
  const std::map<std::string, int64_t> dims{{"n", 16}, {"d", 64}, {"m", 64}};
  const Program lowered = ws.lowered_program("llama_rmsnorm_proj").first;
  const DimBindings bound(dims.begin(), dims.end());
  std::map<std::string, Tensor> named;
  const std::vector<Tensor> inputs = random_inputs(lowered, bound, 11, &named);
  const std::vector<Tensor> want = interpret(lowered, bound, named);
  backend::cuda::CudaDevice device;
  // The cost model's family, the first with a library matmul (cuBLAS), and the eager plan.
  int with_library = 0;
  for (const Candidate& c : found.candidates)
    if (!with_library && c.summary.find("library matmul") != std::string::npos) with_library = c.id;
  std::vector<std::string> plans = {ws.kernel_library("llama_rmsnorm_proj", 0, dims, backend::cuda::kTarget).path,
                                    ws.kernel_library("llama_rmsnorm_proj", with_library, dims, backend::cuda::kTarget).path,
                                    ws.eager_library("llama_rmsnorm_proj", dims, backend::cuda::kTarget).path};
  for (const std::string& path : plans) {
    INFO(path);
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    void* plan = lib.load(text.str().c_str());
    INFO(lib.error());
    REQUIRE(plan != nullptr);
    test::require_close(test::call_on_device(device, inputs, want[0].data.size(),
                                             [&](const void* const* in, void* const* out) { return lib.run(plan, in, out, nullptr); }),
                        want[0].data);
    lib.free(plan);
  }
}
