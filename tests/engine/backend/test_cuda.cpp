// The CUDA backend without a GPU: generated CUDA C++ for the hand-written families (f16 storage,
// several sizes) and for the families the search finds for the examples compiles with NVRTC; the
// PTX cache; the driver loader says in words that there is no device. Tests that need NVRTC warn
// and return where it is absent.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>

#include "../search/search_helpers.h"
#include "../sgraph/families.h"
#include "../sgraph/sgraph_helpers.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cuda/codegen.h"
#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/nvrtc.h"
#include "engine/error.h"
#include "engine/sgraph/evaluate.h"
#include "engine/sgraph/parse.h"
#include "engine/sgraph/print.h"
#include "support/subprocess.h"

using namespace prism;
using namespace prism::backend::cuda;
namespace fam = prism::test::families;

namespace {

const std::string& cache_dir() {
  static test::TempDir dir;
  return dir.path();
}

bool have_nvrtc() {
  NvrtcStatus s = nvrtc_status();
  if (!s.available) WARN("skipped: " << s.detail);
  return s.available;
}

const sgraph::Target kGpu{"cuda", 200 * 1024};

// Compiles the instance's CUDA source with NVRTC; returns the seconds NVRTC took.
double compiles(const sgraph::Instance& inst, const CudaCodegenOptions& options = {}) {
  CudaSource src = generate_cuda_source(inst, options);
  if (const char* dump = std::getenv("PRISM_CUDA_DUMP")) std::ofstream(dump, std::ios::app) << src.source;  // for reading by hand
  INFO("family\n" << sgraph::print(inst.graph) << "\nsource\n" << src.source);
  REQUIRE(src.kernels.size() == inst.graph.kernels.size());
  auto start = std::chrono::steady_clock::now();
  PtxResult ptx;
  try {
    ptx = compile_to_ptx(src.source, "compute_90", cache_dir());
  } catch (const Error& e) {
    FAIL(e.what());
  }
  CHECK(ptx.ptx.find(src.kernels.front().name) != std::string::npos);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double family_compiles(const std::string& family, const DimBindings& dims, const DimBindings& sizes, const CudaCodegenOptions& options = {}) {
  return compiles(sgraph::instantiate(sgraph::parse(family), dims, sizes, kGpu), options);
}

// Max and rms accumulators, a reduction folded by a sum accumulator, a broadcast binary, bf16.
const char* kMaxRmsFamily = R"(input X: bf16[n, d]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: 0->g1, loop: 1}
  e = exp(x)
  m = max_accumulate(e)
  r = rms_accumulate(x, axis=1)
  s = sum(x, axis=1)
  sa = sum_accumulate(s)
  y = mul(m, r)
  z = add(y, sa)
  save O: bf16 = z map {grid: 0->g1, loop: -}
output O
)";

// A value saved inside the loop, walked along its columns.
const char* kWalkedSaveFamily = R"(input X: f16[n, d]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: 0->g1, loop: 1}
  y = gelu(x)
  save O: f16 = y map {grid: 0->g1, loop: 1}
output O
)";

// Library kernels only, mixed storage types.
const char* kLibraryFamily = R"(input A: f16[b, m, k]
input B: f16[k, n]
kernel 0: P: f32 = matmul(A, B)
kernel 1: Q: f16 = silu(P)
kernel 2: R: f32 = rms(Q, axis=2, keepdims=false)
kernel 3: S: bf16 = max(Q, axis=0)
kernel 4: E: f32 = exp(S)
kernel 5: U: f32 = div(Q, E)
kernel 6: V: f32 = sum(U, axis=-1)
kernel 7: W: f16 = sub(U, V)
kernel 8: Z: f16 = relu(W)
output R, Z
)";

}  // namespace

TEST_CASE("cuda: the driver loader says in words whether there is a device", "[cuda]") {
  CudaStatus s = cuda_status();
  INFO(s.detail);
  CHECK_FALSE(s.detail.empty());
  if (s.available) {
    WARN("CUDA device: " << s.detail);
    CHECK(s.detail.find("compute capability") != std::string::npos);
    return;
  }
  CHECK((s.detail.find("no CUDA") != std::string::npos || s.detail.find("CUDA driver") != std::string::npos));
  try {
    CudaDevice device;
    FAIL("a CudaDevice without CUDA");
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::Failed);
    CHECK_THAT(e.what(), Catch::Contains("CUDA is not available") && Catch::Contains(s.detail));
  }
}

TEST_CASE("cuda: NVRTC status is in words", "[cuda]") {
  NvrtcStatus s = nvrtc_status();
  INFO(s.detail);
  CHECK_FALSE(s.detail.empty());
  if (s.available)
    CHECK(s.detail.find("NVRTC ") == 0);
  else
    CHECK(s.detail.find("NVRTC not") == 0);
}

TEST_CASE("cuda: source layout: kernels, parameters, scratch tensors", "[cuda]") {
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(fam::kAttention), {{"B", 2}, {"q", 2}, {"s", 64}, {"e", 16}},
                                              {{"g1", 2}, {"g2", 4}, {"F1", 2}, {"g3", 2}, {"F2", 2}}, kGpu);
  CudaSource src = generate_cuda_source(inst);
  REQUIRE(src.kernels.size() == 2);
  CHECK(src.kernels[0].name == "prism_kernel_0");
  CHECK(src.kernels[0].grid_blocks == 8);
  CHECK(src.kernels[0].threads == 128);
  CHECK(src.kernels[0].shared_bytes > 0);
  CHECK(src.kernels[0].params == std::vector<std::string>{"Q", "Kt", "V", "Pn", "Pd"});
  CHECK(src.kernels[1].params == std::vector<std::string>{"Pn", "Pd", "O"});
  CHECK(src.scratch_tensors == std::vector<std::string>{"Pn", "Pd"});
  CHECK(src.source.find("extern \"C\" __global__") != std::string::npos);
  CHECK(src.source.find("__shfl_xor_sync") == std::string::npos);  // no axis of 32 or more to reduce here

  CudaCodegenOptions bad;
  bad.threads_per_block = 100;
  CHECK_THROWS_WITH(generate_cuda_source(inst, bad), Catch::Contains("threads_per_block"));
  CudaCodegenOptions small;
  small.shared_memory_bytes = 64;
  CHECK_THROWS_WITH(generate_cuda_source(inst, small), Catch::Contains("shared memory"));
}

TEST_CASE("cuda: hand-written families compile with NVRTC", "[cuda]") {
  if (!have_nvrtc()) return;
  double total = 0;
  int sources = 0;
  auto add = [&](double s) {
    total += s;
    ++sources;
  };
  add(family_compiles(fam::kRmsLinear, {{"n", 8}, {"d", 64}}, {{"g1", 4}, {"F1", 2}}));
  add(family_compiles(fam::kRmsLinear, {{"n", 3}, {"d", 80}}, {{"g1", 16}, {"F1", 1}}, {256}));
  add(family_compiles(fam::kGatedMlp, {{"n", 8}, {"d", 64}}, {{"g1", 4}, {"F1", 4}}));
  add(family_compiles(fam::kGatedMlp, {{"n", 16}, {"d", 128}}, {{"g1", 2}, {"F1", 2}}, {64}));
  add(family_compiles(fam::kLora, {{"n", 16}, {"d", 64}, {"m", 128}, {"r", 8}}, {{"g1", 8}, {"F1", 4}}));
  add(family_compiles(fam::kLora, {{"n", 4}, {"d", 32}, {"m", 96}, {"r", 4}}, {{"g1", 2}, {"F1", 16}}));
  add(family_compiles(fam::kAttention, {{"B", 4}, {"q", 1}, {"s", 64}, {"e", 16}}, {{"g1", 2}, {"g2", 4}, {"F1", 2}, {"g3", 2}, {"F2", 4}}));
  add(family_compiles(fam::kAttention, {{"B", 2}, {"q", 3}, {"s", 256}, {"e", 8}}, {{"g1", 1}, {"g2", 2}, {"F1", 2}, {"g3", 2}, {"F2", 1}}));
  add(family_compiles(kMaxRmsFamily, {{"n", 6}, {"d", 256}}, {{"g1", 3}, {"F1", 4}}));
  add(family_compiles(kWalkedSaveFamily, {{"n", 6}, {"d", 40}}, {{"g1", 2}, {"F1", 5}}));
  add(family_compiles(kLibraryFamily, {{"b", 3}, {"m", 5}, {"k", 7}, {"n", 19}}, {}));
  std::string combined = std::string(fam::kSplitContractionPartials) + "kernel 1: O: f32 = sum(P, axis=0, keepdims=false)\noutput O\n";
  add(family_compiles(combined, {{"n", 4}, {"d", 32}, {"m", 24}}, {{"g1", 4}}));
  WARN(sources << " sources compiled with NVRTC, " << total / sources << " s each on average");
}

TEST_CASE("cuda: the PTX cache serves a second compile of the same source", "[cuda]") {
  if (!have_nvrtc()) return;
  test::TempDir dir;
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(fam::kRmsLinear), {{"n", 4}, {"d", 32}}, {{"g1", 2}, {"F1", 2}}, kGpu);
  std::string source = generate_cuda_source(inst).source;
  PtxResult first = compile_to_ptx(source, "compute_90", dir.path());
  CHECK_FALSE(first.cached);
  CHECK(first.ptx.find(".entry prism_kernel_0") != std::string::npos);
  PtxResult second = compile_to_ptx(source, "compute_90", dir.path());
  CHECK(second.cached);
  CHECK(second.ptx == first.ptx);
  PtxResult other_arch = compile_to_ptx(source, "compute_80", dir.path());
  CHECK_FALSE(other_arch.cached);
  CHECK_THROWS_WITH(compile_to_ptx("this is not CUDA", "compute_90", dir.path()), Catch::Contains("NVRTC failed"));
}

const std::map<std::string, DimBindings> kExampleDims = {
      {"rms_linear", {{"n", 4}, {"d", 64}}},
      {"rmsnorm_mlp", {{"n", 4}, {"d", 64}}},
      {"gated_mlp", {{"n", 4}, {"d", 64}}},
      {"lora", {{"n", 4}, {"d", 64}, {"o", 128}, {"r", 8}}},
      {"attention", {{"B", 2}, {"q", 2}, {"s", 64}, {"e", 16}}},
      {"qk_norm_attention", {{"B", 2}, {"q", 2}, {"s", 64}, {"e", 16}}},
      {"gqa", {{"h", 2}, {"g", 2}, {"s", 64}, {"e", 16}}},
};

SearchResult search_example(const std::string& name) {
  SearchLimits limits;
  limits.threads = 2;
  limits.target = "gpu-228k";
  limits.budget_s = 5;
  return search::search_program(test::lowered_example(name), limits);
}

TEST_CASE("cuda: families the search finds for the examples compile with NVRTC", "[cuda][search]") {
  if (!have_nvrtc()) return;
  const auto& dims = kExampleDims;
  const size_t per_example = 1000;  // every family
  double nvrtc_s = 0;
  int sources = 0;
  for (const auto& [name, binding] : dims) {
    INFO("example " << name);
    SearchResult r = search_example(name);
    size_t done = 0;
    for (size_t c = 0; c < r.candidates.size() && done < per_example; ++c) {
      sgraph::SGraph g = sgraph::parse(r.candidates[c].text);
      std::vector<DimBindings> sizes = sgraph::enumerate(g, binding, kGpu, {}, 16);
      if (sizes.empty()) continue;
      nvrtc_s += compiles(sgraph::instantiate(g, binding, sizes.front(), kGpu));
      ++sources;
      ++done;
    }
    CHECK(done > 0);
  }
  WARN(sources << " search families compiled with NVRTC, " << nvrtc_s / std::max(1, sources) << " s each on average");
}

namespace {

// The generated CUDA C++ run on the host (cuda_emulation/prism_cuda_host.h: a std::thread per
// CUDA thread, barriers for __syncthreads and shuffles) against sgraph::evaluate on the same
// inputs: the largest relative error over the outputs.
double emulated_error(const sgraph::Instance& inst, const CudaCodegenOptions& options = {}) {
  CudaSource src = generate_cuda_source(inst, options);
  // Every device tensor, inputs first, with its storage type.
  std::vector<std::string> names;
  for (const auto& in : inst.graph.inputs) names.push_back(in.name);
  for (const auto& k : inst.graph.kernels)
    for (const std::string& o : sgraph::kernel_outputs(k)) names.push_back(o);
  auto slot = [&](const std::string& n) { return size_t(std::find(names.begin(), names.end(), n) - names.begin()); };
  std::string host = src.source + "\nextern \"C\" void prism_emulate(void* const* T) {\n";
  for (const CudaKernelInfo& k : src.kernels) {
    host += "  { void* p[] = {";
    for (const std::string& p : k.params) host += "T[" + std::to_string(slot(p)) + "], ";
    host += "nullptr};\n    prism_launch(" + k.name + ", p, " + std::to_string(k.grid_blocks) + ", " + std::to_string(k.threads) + "); }\n";
  }
  host += R"(}
extern "C" void prism_store(int dtype, const float* x, void* out, long n) {
  for (long i = 0; i < n; ++i)
    if (dtype == 0) prism_put(static_cast<float*>(out) + i, x[i]);
    else if (dtype == 1) prism_put(static_cast<__half*>(out) + i, x[i]);
    else prism_put(static_cast<__nv_bfloat16*>(out) + i, x[i]);
}
extern "C" void prism_load(int dtype, const void* x, float* out, long n) {
  for (long i = 0; i < n; ++i)
    out[i] = dtype == 0 ? static_cast<const float*>(x)[i] : dtype == 1 ? prism_f32(static_cast<const __half*>(x)[i])
                                                                       : prism_f32(static_cast<const __nv_bfloat16*>(x)[i]);
}
)";
  const std::string shim = std::string(PRISM_SOURCE_DIR) + "/tests/engine/backend/cuda_emulation";
  backend::cpu::CompileOptions co;
  co.cache_dir = cache_dir();
  co.flags = {"-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-include", shim + "/prism_cuda_host.h", "-I", shim};
  backend::cpu::LoadedLibrary lib(backend::cpu::compile_library(host, co).path);
  auto emulate = lib.function<void (*)(void* const*)>("prism_emulate");
  auto store = lib.function<void (*)(int, const float*, void*, long)>("prism_store");
  auto load = lib.function<void (*)(int, const void*, float*, long)>("prism_load");

  auto inputs = test::random_inputs(inst.graph, inst.bindings, 5);
  std::vector<Tensor> want = sgraph::evaluate(inst, inputs);
  std::vector<std::vector<char>> buffers;
  std::vector<void*> ptrs;
  for (const std::string& n : names) {
    const Type& t = inst.analysis.tensors.at(n);
    std::vector<int64_t> shape = concrete_shape(t.shape, inst.bindings);
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    buffers.emplace_back(size_t(count) * (t.dtype == DType::F32 ? 4 : 2));
    ptrs.push_back(buffers.back().data());
    if (inputs.count(n)) store(int(t.dtype), inputs.at(n).data.data(), ptrs.back(), long(count));
  }
  emulate(ptrs.data());
  double worst = 0;
  for (size_t o = 0; o < want.size(); ++o) {
    const std::string& n = inst.graph.outputs[o];
    Tensor got = Tensor::zeros(DType::F32, want[o].shape);
    load(int(inst.analysis.tensors.at(n).dtype), ptrs[slot(n)], got.data.data(), long(got.data.size()));
    worst = std::max(worst, test::relative_error(got, want[o]));
  }
  return worst;
}

double emulated_error(const std::string& family, const DimBindings& dims, const DimBindings& sizes, const CudaCodegenOptions& options = {}) {
  return emulated_error(sgraph::instantiate(sgraph::parse(family), dims, sizes, kGpu), options);
}

constexpr double kHalfTol = 4e-3;  // an f16 / bf16 output may round the other way

}  // namespace

TEST_CASE("cuda: generated code run on the host (a thread per CUDA thread) matches the evaluator", "[cuda]") {
  CHECK(emulated_error(fam::kRmsLinear, {{"n", 8}, {"d", 64}}, {{"g1", 4}, {"F1", 2}}) < kHalfTol);
  CHECK(emulated_error(fam::kRmsLinear, {{"n", 3}, {"d", 80}}, {{"g1", 2}, {"F1", 1}}, {64}) < kHalfTol);
  CHECK(emulated_error(fam::kGatedMlp, {{"n", 4}, {"d", 48}}, {{"g1", 2}, {"F1", 3}}) < kHalfTol);
  CHECK(emulated_error(fam::kLora, {{"n", 4}, {"d", 32}, {"m", 96}, {"r", 4}}, {{"g1", 2}, {"F1", 4}}) < kHalfTol);
  CHECK(emulated_error(fam::kAttention, {{"B", 2}, {"q", 3}, {"s", 256}, {"e", 8}}, {{"g1", 1}, {"g2", 2}, {"F1", 2}, {"g3", 2}, {"F2", 1}}) <
        kHalfTol);
  CHECK(emulated_error(fam::kAttention, {{"B", 4}, {"q", 1}, {"s", 64}, {"e", 16}}, {{"g1", 2}, {"g2", 2}, {"F1", 2}, {"g3", 2}, {"F2", 2}}) <
        kHalfTol);
  CHECK(emulated_error(kMaxRmsFamily, {{"n", 6}, {"d", 256}}, {{"g1", 3}, {"F1", 4}}) < 2e-2);  // bf16
  CHECK(emulated_error(kWalkedSaveFamily, {{"n", 6}, {"d", 40}}, {{"g1", 2}, {"F1", 5}}) < kHalfTol);
  CHECK(emulated_error(kLibraryFamily, {{"b", 3}, {"m", 5}, {"k", 7}, {"n", 19}}, {}) < 2e-2);  // bf16 inside
  std::string combined = std::string(fam::kSplitContractionPartials) + "kernel 1: O: f32 = sum(P, axis=0, keepdims=false)\noutput O\n";
  CHECK(emulated_error(combined, {{"n", 4}, {"d", 32}, {"m", 24}}, {{"g1", 4}}) < 1e-5);
}

TEST_CASE("cuda: the first family the search finds for each example, run on the host, matches the evaluator", "[cuda][search]") {
  for (const auto& [name, binding] : kExampleDims) {
    INFO("example " << name);
    SearchResult r = search_example(name);
    for (const auto& c : r.candidates) {
      sgraph::SGraph g = sgraph::parse(c.text);
      std::vector<DimBindings> sizes = sgraph::enumerate(g, binding, kGpu, {}, 16);
      if (sizes.empty()) continue;
      sgraph::Instance inst = sgraph::instantiate(g, binding, sizes[sizes.size() / 2], kGpu);
      INFO("family\n" << sgraph::print(inst.graph));
      CHECK(emulated_error(inst) < kHalfTol);
      break;
    }
  }
}
