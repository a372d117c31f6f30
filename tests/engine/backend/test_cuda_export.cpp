// A CUDA export (engine/backend/cuda/export.h): its header, its kernels renamed, and its host
// launcher run end to end in the host emulation (cuda_emulation/prism_cuda_host.h) against the
// reference interpreter; with nvcc at hand, the export compiles as real CUDA too, and with a GPU
// it runs there (scripts/gpu_session.sh runs every [cuda] test).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/backend/cpu/compiler.h"
#include "device_call.h"
#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/gpu_features.h"
#include "engine/interp/interpreter.h"
#include "engine/workspace/workspace.h"
#include "support/subprocess.h"

using namespace prism;

namespace {

const std::string& cache_dir() {
  static test::TempDir dir;
  return dir.path();
}

std::string read_layer(const std::string& name) {
  std::ifstream in(test::source("examples/layers/" + name + ".prism"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `program`'s CUDA export at `dims`: the family the cost model picks among those without vendor
// matmuls, or (`library`) the first with one, which the CUDA plan runs through cuBLAS.
tune::KernelSource cuda_export(Workspace& ws, const std::string& program, const std::map<std::string, int64_t>& dims, bool library) {
  ws.set_storage(cache_dir() + "/data", cache_dir());
  ws.open(program + ".prism", read_layer(program), 1);
  SearchLimits limits;
  limits.library_kernels = library ? 2 : 0;
  const SearchResult found = ws.search(program, limits);
  int candidate = 0;
  for (const Candidate& c : found.candidates)
    if (library && candidate == 0 && c.summary.find("library matmul") != std::string::npos) candidate = c.id;
  REQUIRE((!library || candidate != 0));
  return ws.kernel_source(program, candidate, dims, backend::cuda::kTarget);
}

// The export compiled for the host emulation, and its entry point.
using ExportFn = int (*)(const void* const*, void* const*, void*);
using ErrorFn = const char* (*)();
std::unique_ptr<backend::cpu::LoadedLibrary> emulated(const tune::KernelSource& k) {
  const std::string shim = test::source("tests/engine/backend/cuda_emulation");
  backend::cpu::CompileOptions co;
  co.cache_dir = cache_dir() + "/emulated";
  co.flags = {"-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-include", shim + "/prism_cuda_host.h", "-I", shim};
  return std::make_unique<backend::cpu::LoadedLibrary>(backend::cpu::compile_library(k.header + k.export_source, co).path);
}

}  // namespace

TEST_CASE("cuda export: the header declares the launcher, and the launcher runs the plan to the reference's values",
          "[cuda][export]") {
  Workspace ws;
  const std::map<std::string, int64_t> dims{{"n", 2}, {"d", 64}, {"m", 32}};
  tune::KernelSource k = cuda_export(ws, "llama_rmsnorm_proj", dims, false);
  const std::string symbol = "prism_llama_rmsnorm_proj_d64_m32_n2";
  CHECK_THAT(k.header, Catch::Contains("int " + symbol + "(const void* const* inputs, void* const* outputs, void* stream);") &&
                           Catch::Contains("const char* " + symbol + "_error(void);"));
  CHECK_THAT(k.export_source, Catch::StartsWith("// This export's kernels under its own names.\n#define prism_kernel_0 " + symbol +
                                                "_prism_kernel_0\n"));
  auto lib = emulated(k);
  const Program lowered = ws.lowered_program("llama_rmsnorm_proj").first;
  const DimBindings bound(dims.begin(), dims.end());
  std::map<std::string, Tensor> named;
  std::vector<Tensor> inputs = random_inputs(lowered, bound, 7, &named);
  std::vector<Tensor> want = interpret(lowered, bound, named);
  REQUIRE(want.size() == 1);
  std::vector<float> got(want[0].data.size(), std::nanf(""));
  std::vector<const void*> in;
  for (const Tensor& t : inputs) in.push_back(t.data.data());  // f32 storage, as declared
  void* out[] = {got.data()};
  REQUIRE(lib->function<ExportFn>(symbol)(in.data(), out, nullptr) == 0);
  CHECK(std::string(lib->function<ErrorFn>(symbol + "_error")()).empty());
  float scale = 0;
  for (float w : want[0].data) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(std::fabs(got[i] - want[0].data[i]) <= 1e-3f * std::fabs(want[0].data[i]) + 1e-4f * scale);
  }
}

TEST_CASE("cuda export: a plan with cuBLAS matmuls calls them from the launcher, and a failed call is reported",
          "[cuda][export]") {
  Workspace ws;
  const std::map<std::string, int64_t> dims{{"n", 16}, {"d", 64}, {"m", 64}};
  tune::KernelSource k = cuda_export(ws, "llama_rmsnorm_proj", dims, true);
  INFO(k.summary);
  REQUIRE_THAT(k.export_source, Catch::Contains("prism_export_gemm(stream,"));
  auto lib = emulated(k);
  const std::string symbol = "prism_llama_rmsnorm_proj_d64_m64_n16";
  std::vector<float> x(16 * 64, 1.0f), g(64, 1.0f), w(64 * 64, 1.0f), out(16 * 64);
  const void* in[] = {x.data(), g.data(), w.data()};
  void* outs[] = {out.data()};
  CHECK(lib->function<ExportFn>(symbol)(in, outs, nullptr) == 1);
  CHECK(std::string(lib->function<ErrorFn>(symbol + "_error")()) == "the host emulation runs no cuBLAS");
}

TEST_CASE("cuda export: the source and its launcher compile with nvcc", "[cuda][export]") {
  const std::string nvcc = "/usr/local/cuda/bin/nvcc", cublas = "/usr/local/cuda/include/cublas_v2.h";
  if (!std::filesystem::exists(nvcc) || !std::filesystem::exists(cublas)) {
    WARN("skipped: no " << (std::filesystem::exists(nvcc) ? cublas : nvcc));
    return;
  }
  Workspace ws;
  tune::KernelSource k = cuda_export(ws, "llama_rmsnorm_proj", {{"n", 16}, {"d", 64}, {"m", 64}}, true);
  test::TempDir dir;
  std::ofstream(dir / "k.h") << k.header;
  std::ofstream(dir / "k.cu") << "#include \"k.h\"\n" << k.export_source;
  auto r = test::run_process({nvcc, "-c", "-arch=sm_90", "-I", dir.path(), dir / "k.cu", "-o", dir / "k.o"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("cuda export: on a GPU, the launcher built by nvcc runs the plan, cuBLAS included, to the reference's values",
          "[cuda][export]") {
  const std::string nvcc = "/usr/local/cuda/bin/nvcc";
  const backend::cuda::CudaStatus status = backend::cuda::cuda_status();
  if (!status.available || !std::filesystem::exists(nvcc)) {
    WARN("skipped: " << (status.available ? "no " + nvcc : status.detail));
    return;
  }
  backend::cuda::CudaDevice device;  // the primary context, which the runtime API shares
  for (bool library : {false, true}) {
    Workspace ws;
    const std::map<std::string, int64_t> dims{{"n", 16}, {"d", 64}, {"m", 64}};
    tune::KernelSource k = cuda_export(ws, "llama_rmsnorm_proj", dims, library);
    test::TempDir dir;
    std::ofstream(dir / "k.cu") << k.header << k.export_source;
    auto built = test::run_process({nvcc, "-O2", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", dir / "k.cu", "-o", dir / "k.so", "-lcublas"});
    INFO(built.err);
    REQUIRE(built.exit_code == 0);
    backend::cpu::LoadedLibrary lib(dir / "k.so");
    const Program lowered = ws.lowered_program("llama_rmsnorm_proj").first;
    const DimBindings bound(dims.begin(), dims.end());
    std::map<std::string, Tensor> named;
    std::vector<Tensor> inputs = random_inputs(lowered, bound, 9, &named);
    std::vector<Tensor> want = interpret(lowered, bound, named);
    const std::string symbol = "prism_llama_rmsnorm_proj_d64_m64_n16";
    INFO(k.summary);
    test::require_close(test::call_on_device(device, inputs, want[0].data.size(),
                                             [&](const void* const* in, void* const* out) {
                                               return lib.function<ExportFn>(symbol)(in, out, nullptr);
                                             }),
                        want[0].data);
  }
}
