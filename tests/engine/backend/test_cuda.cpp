// The CUDA backend without a GPU: generated CUDA C++ for the hand-written families (f16 storage,
// several sizes) and for the families the search finds for the examples compiles with NVRTC; the
// PTX cache; the driver loader says in words that there is no device. Tests that need NVRTC warn
// and return where it is absent.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <set>

#include "../search/search_helpers.h"
#include "masked_inputs.h"
#include "wide_activations.h"
#include "../sgraph/families.h"
#include "../sgraph/sgraph_helpers.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cuda/bandwidth.h"
#include "engine/backend/cuda/codegen.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/describe.h"
#include "engine/backend/cuda/double_buffer.h"
#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/emit_ops.h"
#include "engine/backend/cuda/export.h"
#include "engine/backend/cuda/nvrtc.h"
#include "engine/backend/cuda/pad_tiles.h"
#include "engine/backend/cuda/plan.h"
#include "engine/backend/cuda/ticket.h"
#include "engine/backend/lower.h"
#include "engine/error.h"
#include "engine/sgraph/evaluate.h"
#include "engine/sgraph/parse.h"
#include "engine/sgraph/print.h"
#include "engine/sgraph/tail_groups.h"
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

const sgraph::TileBudget kGpu{200 * 1024};

// Compiles the instance's CUDA source with NVRTC; returns the seconds NVRTC took.
double compiles(const sgraph::Instance& inst, const CudaCodegenOptions& options = {}) {
  CudaSource src = generate_cuda_source(inst, options);
  if (const char* dump = std::getenv("PRISM_CUDA_DUMP")) std::ofstream(dump, std::ios::app) << src.source;  // for reading by hand
  INFO("family\n" << sgraph::print(inst.graph) << "\nsource\n" << src.source);
  REQUIRE(src.launch_of.size() == backend::lower(inst, backend::cuda_lowering()).kernels.size());  // a reshape read in place is none
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
  CudaCodegenOptions separate;
  separate.tails_in_launch = false;
  CudaSource src = generate_cuda_source(inst, separate);
  REQUIRE(src.kernels.size() == 2);
  CHECK(src.launch_of == std::vector<size_t>{0, 1});
  CHECK(src.counters.empty());
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

const std::map<std::string, DimBindings>& kExampleDims = test::small_example_dims();

SearchResult search_example(const std::string& name) {
  SearchLimits limits;
  limits.threads = 2;
  limits.fast_memory_bytes = kGpuOptInSharedBytes;
  limits.budget_s = 5;
  return search::search_program(test::lowered_example(name), limits);
}

TEST_CASE("cuda: families the search finds for the examples compile with NVRTC", "[cuda][search]") {
  if (!have_nvrtc()) return;
  const auto& dims = kExampleDims;
  // At most 24 families an example, spread evenly over the search's order, the first and the last
  // included (docs/testing.md, "Time").
  const size_t per_example = 24;
  double nvrtc_s = 0;
  int sources = 0;
  for (const auto& [name, binding] : dims) {
    INFO("example " << name);
    SearchResult r = search_example(name);
    size_t done = 0;
    const size_t stride = std::max<size_t>(1, (r.candidates.size() + per_example - 1) / per_example);
    std::vector<size_t> picked;
    for (size_t c = 0; c < r.candidates.size(); c += stride) picked.push_back(c);
    if (!r.candidates.empty() && picked.back() != r.candidates.size() - 1) picked.push_back(r.candidates.size() - 1);
    for (size_t c : picked) {
      sgraph::SGraph g = *r.candidates[c].graph;
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
std::vector<Tensor> emulated_outputs(const sgraph::Instance& inst, const std::map<std::string, Tensor>& inputs, const CudaCodegenOptions& options = {}) {
  CudaSource src = generate_cuda_source(inst, options);
  // Every device tensor, inputs first, with its storage type.
  std::vector<std::string> names;
  for (const auto& in : inst.graph.inputs) names.push_back(in.name);
  for (const auto& k : inst.graph.kernels)
    for (const std::string& o : sgraph::kernel_outputs(k)) names.push_back(o);
  std::map<std::string, int64_t> counters(src.counters.begin(), src.counters.end());  // zeroed (ticket.h)
  for (const auto& [n, words] : counters) names.push_back(n);
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

  // Device tensors as cuMemAlloc gives them: 256-byte aligned (the vector loads rely on it).
  std::vector<std::unique_ptr<void, decltype(&std::free)>> buffers;
  std::vector<void*> ptrs;
  for (const std::string& n : names) {
    if (counters.count(n)) {
      buffers.emplace_back(std::aligned_alloc(256, size_t(counters[n] * 4 + 255) / 256 * 256), &std::free);
      ptrs.push_back(buffers.back().get());
      std::memset(ptrs.back(), 0, size_t(counters[n]) * 4);
      continue;
    }
    const Type& t = inst.analysis.tensors.at(n);
    std::vector<int64_t> shape = concrete_shape(t.shape, inst.bindings);
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    size_t bytes = (size_t(count) * (t.dtype == DType::F32 ? 4 : 2) + 255) / 256 * 256;
    buffers.emplace_back(std::aligned_alloc(256, bytes), &std::free);
    ptrs.push_back(buffers.back().get());
    std::memset(ptrs.back(), 0, bytes);
    if (inputs.count(n)) store(int(t.dtype), inputs.at(n).data.data(), ptrs.back(), long(count));
  }
  emulate(ptrs.data());
  for (const auto& [n, words] : counters)  // the launch leaves its ticket counters zero
    for (int64_t w = 0; w < words; ++w) REQUIRE(static_cast<const unsigned*>(ptrs[slot(n)])[w] == 0u);
  std::vector<Tensor> outputs;
  for (const std::string& n : inst.graph.outputs) {
    Tensor got = Tensor::zeros(DType::F32, concrete_shape(inst.analysis.tensors.at(n).shape, inst.bindings));
    load(int(inst.analysis.tensors.at(n).dtype), ptrs[slot(n)], got.data.data(), long(got.data.size()));
    outputs.push_back(std::move(got));
  }
  return outputs;
}

// The largest relative error of the emulated outputs against the evaluator on seeded inputs.
double emulated_error(const sgraph::Instance& inst, const CudaCodegenOptions& options = {}) {
  auto inputs = test::random_inputs(inst.graph, inst.bindings, 5);
  std::vector<Tensor> want = sgraph::evaluate(inst, inputs), got = emulated_outputs(inst, inputs, options);
  double worst = 0;
  for (size_t o = 0; o < want.size(); ++o) worst = std::max(worst, test::relative_error(got[o], want[o]));
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

TEST_CASE("cuda: a split-k kernel and the kernel that sums its partials run in one launch, and match", "[cuda][ticket]") {
  // Decode-sized (n = 8): g1 splits d, g2 the columns; each combining block's columns lie in one
  // column tile of the partials (g3 = 4 over g2 = 2) or span two (g3 = 2 over g2 = 4).
  const DimBindings dims{{"n", 8}, {"d", 64}};
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(fam::kGatedMlpSplitK), dims, {{"g1", 2}, {"g2", 2}, {"F1", 2}, {"g3", 4}, {"F2", 2}}, kGpu);
  const backend::kir::Program lowered = backend::lower(inst, backend::cuda_lowering());
  std::optional<TicketGroups> groups = ticket_groups(lowered, 0);
  REQUIRE(groups);
  // Blocks (split, column tile), the last dim fastest: the groups are the column tiles.
  CHECK(groups->group_of == std::vector<int>{0, 1, 0, 1});
  CHECK(groups->arrivals == std::vector<int>{2, 2});
  CHECK(groups->tail_start == std::vector<int>{0, 2, 4});
  CHECK(groups->tail_blocks == std::vector<int>{0, 1, 2, 3});
  CHECK_FALSE(ticket_groups(lowered, 1));  // no kernel after the last
  // The cost model's count from the maps (sgraph/tail_groups.h) agrees with the trace.
  CHECK(sgraph::tail_groups(inst, 1) == 2);
  CHECK(sgraph::tail_groups(inst, 0) == 0);
  for (const DimBindings& sizes : std::vector<DimBindings>{{{"g1", 2}, {"g2", 4}, {"F1", 1}, {"g3", 2}, {"F2", 1}},
                                                           {{"g1", 4}, {"g2", 4}, {"F1", 1}, {"g3", 8}, {"F2", 2}},
                                                           {{"g1", 1}, {"g2", 8}, {"F1", 2}, {"g3", 8}, {"F2", 1}}}) {
    sgraph::Instance other = sgraph::instantiate(sgraph::parse(fam::kGatedMlpSplitK), dims, sizes, kGpu);
    std::optional<TicketGroups> traced = ticket_groups(backend::lower(other, backend::cuda_lowering()), 0);
    REQUIRE(traced);
    CHECK(sgraph::tail_groups(other, 1) == traced->groups());
  }
  sgraph::Instance flash = sgraph::instantiate(sgraph::parse(fam::kAttention), {{"B", 4}, {"q", 1}, {"s", 64}, {"e", 16}},
                                               {{"g1", 4}, {"g2", 4}, {"F1", 2}, {"g3", 2}, {"F2", 2}}, kGpu);
  REQUIRE(ticket_groups(backend::lower(flash, backend::cuda_lowering()), 0));
  CHECK(sgraph::tail_groups(flash, 1) == ticket_groups(backend::lower(flash, backend::cuda_lowering()), 0)->groups());

  CudaSource src = generate_cuda_source(inst);
  REQUIRE(src.kernels.size() == 1);
  CHECK(src.launch_of == std::vector<size_t>{0, 0});
  CHECK(src.kernels[0].params == std::vector<std::string>{"X", "Wg", "Wu", "Pg", "Pu", "O", "prism_kernel_0_tickets"});
  CHECK(src.counters == std::vector<std::pair<std::string, int64_t>>{{"prism_kernel_0_tickets", 2}});
  CHECK(src.scratch_tensors == std::vector<std::string>{"Pg", "Pu"});
  CHECK(src.source.find("atomicAdd(p6 + prism_group, 1u)") != std::string::npos);
  // The plan: one launch, the counters zeroed scratch, and its text keeps them so.
  CudaPlan plan = candidate_plan(inst, lowered, src);
  REQUIRE(plan.steps.size() == 1);
  REQUIRE(plan.scratch.size() == 3);
  CHECK(plan.scratch[2].zeroed);
  CHECK(plan.scratch[2].elements == 2);
  const std::string text = plan_text(plan);
  CHECK(text.find("tensor zeroed prism_kernel_0_tickets 2 f32\n") != std::string::npos);
  CHECK(parse_plan(text).scratch[2].zeroed);
  CHECK_FALSE(parse_plan(text).scratch[0].zeroed);

  // Run on the host, blocks out of index order: the outputs match, the counters end at zero.
  CHECK(emulated_error(inst) < kHalfTol);
  CHECK(emulated_error(fam::kGatedMlpSplitK, dims, {{"g1", 2}, {"g2", 4}, {"F1", 1}, {"g3", 2}, {"F2", 1}}) < kHalfTol);
  CHECK(emulated_error(fam::kGatedMlpSplitK, {{"n", 3}, {"d", 48}}, {{"g1", 3}, {"g2", 3}, {"F1", 1}, {"g3", 3}, {"F2", 3}}, {256}) < kHalfTol);
  // Flash decoding: the partial numerators and denominators of each batch element, then their sums.
  CHECK(emulated_error(fam::kAttention, {{"B", 2}, {"q", 2}, {"s", 64}, {"e", 16}}, {{"g1", 2}, {"g2", 4}, {"F1", 2}, {"g3", 2}, {"F2", 2}}) < kHalfTol);

  // Where one combining block reads every partial there is one group: no tickets, but the tail's
  // blocks follow the first kernel's in its launch and wait for them (waits_in_launch). The host
  // emulation runs the blocks out of index order, so tail blocks meet the wait unfinished and run
  // again after the others.
  sgraph::Instance one = sgraph::instantiate(sgraph::parse(fam::kGatedMlpSplitK), dims, {{"g1", 2}, {"g2", 2}, {"F1", 2}, {"g3", 1}, {"F2", 2}}, kGpu);
  const backend::kir::Program one_lowered = backend::lower(one, backend::cuda_lowering());
  CHECK_FALSE(ticket_groups(one_lowered, 0));
  CHECK(waits_in_launch(one_lowered, 0));
  CHECK_FALSE(waits_in_launch(one_lowered, 1));
  CHECK(sgraph::tail_groups(one, 1) == 1);
  const CudaSource waiting = generate_cuda_source(one);
  INFO(waiting.source);
  REQUIRE(waiting.kernels.size() == 1);
  CHECK(waiting.launch_of == std::vector<size_t>{0, 0});
  CHECK(waiting.kernels[0].grid_blocks == 4 + 1);  // the first kernel's 2 x 2 blocks, then the tail's one
  CHECK(waiting.counters == std::vector<std::pair<std::string, int64_t>>{{"prism_kernel_0_arrivals", 2}});
  CHECK(waiting.source.find("prism_blocks_arrived(p6, 4u)") != std::string::npos);
  CHECK(emulated_error(one) < kHalfTol);
  CHECK(emulated_error(fam::kGatedMlpSplitK, {{"n", 3}, {"d", 48}}, {{"g1", 3}, {"g2", 3}, {"F1", 1}, {"g3", 1}, {"F2", 3}}, {256}) < kHalfTol);
  // Turned off: two launches.
  CudaCodegenOptions apart;
  apart.tails_in_launch = false;
  CHECK(generate_cuda_source(one, apart).kernels.size() == 2);
  CHECK(emulated_error(one, apart) < kHalfTol);
  if (!have_nvrtc()) return;
  compiles(inst);
  const PtxResult ptx = compile_to_ptx(src.source, "compute_90", cache_dir());
  CHECK(ptx.ptx.find("atom.global.add.u32") != std::string::npos);
  CHECK(ptx.ptx.find("membar.gl") != std::string::npos);
  compiles(one);
  const std::string waits = compile_to_ptx(waiting.source, "compute_90", cache_dir()).ptx;
  CHECK(waits.find("nanosleep") != std::string::npos);
  CHECK(waits.find("ld.volatile.global.u32") != std::string::npos);
}

TEST_CASE("cuda: an export's launcher zeroes the ticket counters of a launch with a tail, call after call", "[cuda][ticket][export]") {
  // f32 throughout, so that the launcher takes the caller's float arrays as they are. Scratch in
  // the emulation is allocated full of 0xff bytes: counters left so would never see a last block.
  std::string family = fam::kGatedMlpSplitK;
  for (size_t at; (at = family.find("f16")) != std::string::npos;) family.replace(at, 3, "f32");
  const DimBindings dims{{"n", 4}, {"d", 32}};
  // Tickets (two groups), and a tail that waits (one group): each launch leaves its counters at 0.
  for (const DimBindings& sizes : {DimBindings{{"g1", 2}, {"g2", 2}, {"F1", 1}, {"g3", 2}, {"F2", 1}},
                                   DimBindings{{"g1", 2}, {"g2", 2}, {"F1", 1}, {"g3", 1}, {"F2", 1}}}) {
  CAPTURE(sizes.at("g3"));
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(family), dims, sizes, kGpu);
  const backend::kir::Program lowered = backend::lower(inst, backend::cuda_lowering());
  const CudaSource src = generate_cuda_source(lowered);
  REQUIRE(src.counters.size() == 1);
  const std::string exported = export_source(src.source, candidate_plan(inst, lowered, src), "prism_split");
  REQUIRE_THAT(exported, Catch::Contains("prism_export_zero("));
  const std::string shim = std::string(PRISM_SOURCE_DIR) + "/tests/engine/backend/cuda_emulation";
  backend::cpu::CompileOptions co;
  co.cache_dir = cache_dir();
  co.flags = {"-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-include", shim + "/prism_cuda_host.h", "-I", shim};
  backend::cpu::LoadedLibrary lib(backend::cpu::compile_library(exported, co).path);
  auto run = lib.function<int (*)(const void* const*, void* const*, void*)>("prism_split");

  auto inputs = test::random_inputs(inst.graph, inst.bindings, 3);
  const std::vector<Tensor> want = sgraph::evaluate(inst, inputs);
  const void* in[] = {inputs.at("X").data.data(), inputs.at("Wg").data.data(), inputs.at("Wu").data.data()};
  for (int call = 0; call < 2; ++call) {
    std::vector<float> got(want[0].data.size(), std::nanf(""));
    void* out[] = {got.data()};
    REQUIRE(run(in, out, nullptr) == 0);
    Tensor t = want[0];
    t.data = got;
    CHECK(test::relative_error(t, want[0]) < 1e-5);
  }
  }
}

TEST_CASE("cuda: split and concat on tiles compile and run right on the host", "[cuda][rotary]") {
  for (const auto& [family, dims, sizes] : {std::tuple{fam::kRotary, DimBindings{{"h", 4}, {"s", 6}, {"e", 16}}, DimBindings{{"g1", 2}, {"g2", 3}}},
                                            std::tuple{fam::kSwapHalves, DimBindings{{"n", 6}, {"d", 34}}, DimBindings{{"g1", 3}}}}) {
    const sgraph::Instance inst = sgraph::instantiate(sgraph::parse(family), dims, sizes, kGpu);
    if (have_nvrtc()) compiles(inst);
    CHECK(emulated_error(inst) < 1e-6);
  }
}

TEST_CASE("cuda: every elementwise op of the table, in a custom and a library kernel, compiles and matches the evaluator", "[cuda][ops]") {
  CHECK(emulated_error(fam::every_elementwise_op_family(), {{"n", 3}, {"d", 40}}, {{"g1", 3}, {"F1", 5}}) < 1e-6);
  CHECK(emulated_error(fam::every_elementwise_op_family("f16"), {{"n", 3}, {"d", 40}}, {{"g1", 3}, {"F1", 5}}) < kHalfTol);
  if (have_nvrtc()) family_compiles(fam::every_elementwise_op_family("bf16"), {{"n", 4}, {"d", 64}}, {{"g1", 2}, {"F1", 4}});
}

namespace {

// A layer's families for the GPU's shared memory (what is found, not how fast).
SearchResult gpu_search(const std::string& text, const std::string& name) {
  SearchLimits limits;
  limits.threads = 2;
  limits.fast_memory_bytes = kGpuOptInSharedBytes;
  limits.budget_s = 120;
  return search::search_program(test::lowered_text(text, name), limits);
}

// A family at `dims` with a middle choice of its sizes (grids and loops of more than one block
// or iteration where possible); none when no sizes fit.
std::optional<sgraph::Instance> middle_instance(const sgraph::SGraph& g, const DimBindings& dims) {
  std::vector<DimBindings> sizes = sgraph::enumerate(g, dims, kGpu, {}, 16);
  if (sizes.empty()) return std::nullopt;
  return sgraph::instantiate(g, dims, sizes[sizes.size() / 2], kGpu);
}

// Searches a layer for the GPU's shared memory, compiles the first `compile` instantiable
// families with NVRTC (when there is one) and runs the first `emulate` of them on the host
// against the evaluator. Returns how many ran.
int check_layer_families(const std::string& text, const std::string& name, const DimBindings& small, size_t compile, int emulate) {
  INFO(name);
  SearchResult r = gpu_search(text, name);
  REQUIRE_FALSE(r.candidates.empty());
  int emulated = 0;
  size_t compiled = 0;
  for (const auto& c : r.candidates) {
    std::optional<sgraph::Instance> found = middle_instance(*c.graph, small);
    if (!found) continue;
    const sgraph::Instance& inst = *found;
    INFO("family\n" << sgraph::print(inst.graph));
    if (have_nvrtc()) compiles(inst);
    if (emulated < emulate) {
      CHECK(emulated_error(inst) < kHalfTol);
      ++emulated;
    }
    if (++compiled == compile) break;
  }
  return emulated;
}

}  // namespace

TEST_CASE("cuda: layers with sigmoid, tanh and abs: every family compiles, the first runs right on the host", "[cuda][search][ops]") {
  for (const test::Layer& layer : test::activation_layers())
    CHECK(check_layer_families(layer.text, layer.name, layer.small, SIZE_MAX, 1) == 1);
}

// A few families per layer (the CPU tests tune them all), a third of examples/layers per test
// case: all of them in one ran 108 s alone on a 2-core Zen 3, past CTest's 120 s beside another
// test (halves: 82 s).
namespace {
void check_example_layers(int third) {
  const size_t n = test::example_layers().size();
  for (size_t i = third * n / 3; i < (third + 1) * n / 3; ++i) {
    const test::ExampleLayer& layer = test::example_layers()[i];
    CHECK(check_layer_families(test::layer_text(layer.name), layer.name, layer.small, 2, 2) > 0);
  }
}
}  // namespace

TEST_CASE("cuda: the first third of examples/layers (constants, vector and transposed views): families compile and run right on the host",
          "[cuda][search][layers]") {
  check_example_layers(0);
}

TEST_CASE("cuda: the second third of examples/layers: families compile and run right on the host", "[cuda][search][layers]") {
  check_example_layers(1);
}

TEST_CASE("cuda: the last third of examples/layers: families compile and run right on the host", "[cuda][search][layers]") {
  check_example_layers(2);
}

namespace {

// "online" for an online-softmax family, "split" for flash-decoding, else "".
std::string online_kind(const std::string& summary) {
  if (summary.find("(online softmax)") != std::string::npos) return "online";
  return summary.find("(flash-decoding)") != std::string::npos ? "split" : "";
}

}  // namespace

TEST_CASE("cuda: online-softmax and flash-decoding families compile and run right on the host", "[cuda][search][online]") {
  for (const test::ExampleLayer& layer : test::example_layers()) {
    if (std::string(layer.name) != "sdpa" && std::string(layer.name) != "gqa_decode") continue;
    INFO(layer.name);
    SearchResult r = gpu_search(test::layer_text(layer.name), layer.name);
    std::set<std::string> seen;
    for (const auto& c : r.candidates) {
      const std::string kind = online_kind(c.summary);
      if (kind.empty() || seen.count(kind)) continue;
      std::optional<sgraph::Instance> found = middle_instance(*c.graph, layer.small);
      if (!found) continue;
      seen.insert(kind);
      const sgraph::Instance& inst = *found;
      INFO("family\n" << sgraph::print(inst.graph));
      if (have_nvrtc()) compiles(inst);
      CHECK(emulated_error(inst) < kHalfTol);
    }
    CHECK(seen.size() == 2);
  }
}

// Llama's RMSNorm (eps, a gain) before an nn.Linear projection: the GEMV form splits the
// projection's k and its columns across blocks, and the combining kernel, in the same launch,
// sums the partials and computes the norm's statistic from X itself (build_family.cpp,
// cone_kernel0_would_copy), since every column block would otherwise save the same one.
TEST_CASE("cuda: a norm beside a split-k projection: the combining kernel computes it from X, in one launch, and matches",
          "[cuda][search][ticket]") {
  const test::ExampleLayer& layer = test::example_layer("llama_rmsnorm_proj");
  SearchResult r = gpu_search(test::layer_text(layer.name), layer.name);
  int ran = 0, fused = 0;
  for (const auto& c : r.candidates) {
    const auto& kernels = c.graph->kernels;
    if (kernels.size() != 2 || !kernels[1].custom) continue;
    bool loads_x = false;
    for (const sgraph::BlockOp& op : kernels[1].block.ops) loads_x = loads_x || (op.kind == sgraph::BlockOp::Kind::Load && op.tensor == "X");
    if (!loads_x || c.summary.find("splits m") == std::string::npos) continue;
    // Sizes whose combining blocks fall into two groups or more (a tail in the launch), else the middle ones.
    std::optional<sgraph::Instance> found = middle_instance(*c.graph, layer.small);
    for (const DimBindings& sizes : sgraph::enumerate(*c.graph, layer.small, kGpu, {}, 64)) {
      sgraph::Instance inst = sgraph::instantiate(*c.graph, layer.small, sizes, kGpu);
      if (!ticket_groups(backend::lower(inst, backend::cuda_lowering()), 0)) continue;
      found = std::move(inst);
      ++fused;
      break;
    }
    if (!found) continue;
    INFO(c.summary << "\nfamily\n" << sgraph::print(found->graph));
    CHECK(emulated_error(*found) < 1e-4);  // f32 throughout
    if (++ran == 3) break;
  }
  CHECK(ran == 3);
  CHECK(fused == 3);
}

// docs/tuning.md, "A tail that waits": a down projection that reads the whole gated product.
TEST_CASE("cuda: the SwiGLU's down projection waits in the gated product's launch, run on the host, and matches",
          "[cuda][search][ticket]") {
  const test::ExampleLayer& layer = test::example_layer("swiglu_ffn");
  SearchResult r = gpu_search(test::layer_text(layer.name), layer.name);
  const CudaCodegenOptions two_blocks = CudaBackend().codegen_options(cuda_h100_data(), {{"threads", 256}, {"blocks_per_sm", 2}});
  int ran = 0;
  for (const auto& c : r.candidates) {
    const auto& kernels = c.graph->kernels;
    if (kernels.size() != 2 || !kernels[0].custom || !kernels[1].custom) continue;
    // Sizes with more than one block in each kernel, so that tail blocks meet an unfinished wait.
    std::optional<sgraph::Instance> found;
    for (const DimBindings& sizes : sgraph::enumerate(*c.graph, layer.small, kGpu, {}, 64)) {
      sgraph::Instance inst = sgraph::instantiate(*c.graph, layer.small, sizes, kGpu);
      const backend::kir::Program lowered = backend::lower(inst, backend::cuda_lowering());
      if (ticket_groups(lowered, 0) || !waits_in_launch(lowered, 0)) continue;
      if (lowered.kernels[0].block.blocks() < 2 || lowered.kernels[1].block.blocks() < 2) continue;
      found = std::move(inst);
      break;
    }
    if (!found) continue;
    INFO(c.summary << "\nfamily\n" << sgraph::print(found->graph));
    CHECK(generate_cuda_source(*found).kernels.size() == 1);
    CHECK(emulated_error(*found) < 1e-4);  // f32 throughout
    CHECK(emulated_error(*found, two_blocks) < 1e-4);
    if (have_nvrtc()) compiles(*found, two_blocks);
    if (++ran == 2) break;
  }
  CHECK(ran == 2);
}

// docs/sgraph.md, "Masked pieces": pieces of a row all -inf under a causal mask.
TEST_CASE("cuda: online softmax under a causal -inf mask, run on the host: finite where the reference is, NaN on a row masked whole",
          "[cuda][search][online][masked]") {
  const test::ExampleLayer& layer = test::example_layer("causal_sdpa");
  SearchResult r = gpu_search(test::layer_text(layer.name), layer.name);
  std::set<std::string> seen;
  for (const auto& c : r.candidates) {
    const std::string kind = online_kind(c.summary);
    if (kind.empty() || seen.count(kind)) continue;
    std::optional<sgraph::Instance> found = middle_instance(*c.graph, layer.small);
    if (!found) continue;
    seen.insert(kind);
    INFO("family\n" << sgraph::print(found->graph));
    for (bool whole_row : {false, true}) {
      const auto named = test::causal_inputs(layer.small, whole_row);
      const Tensor want = test::causal_reference(layer.small, named);
      CHECK(test::relative_error(emulated_outputs(*found, test::graph_inputs(found->graph, named)).at(0), want) < 1e-4);
    }
  }
  CHECK(seen.size() == 2);
}

// docs/search.md, "Casts": 16-bit statistics in f32, on activations that overflow them at 16 bits.
TEST_CASE("cuda: f16 norms on wide activations, run on the host, match the reference's f32 statistics", "[cuda][search][casts]") {
  for (const test::WideLayer& layer : test::wide_layers()) {
    INFO(layer.name);
    const Program lowered = test::lowered_text(layer.text, layer.name);
    SearchResult r = gpu_search(layer.text, layer.name);
    const auto named = test::wide_inputs(lowered);
    const Tensor want = interpret(lowered, test::wide_dims(), named).at(0);
    int checked = 0;
    for (const auto& c : r.candidates) {
      std::optional<sgraph::Instance> inst = middle_instance(*c.graph, test::wide_dims());
      if (!inst) continue;
      INFO("family\n" << sgraph::print(inst->graph));
      CHECK(test::relative_error(emulated_outputs(*inst, test::graph_inputs(inst->graph, named)).at(0), want) < kHalfTol);
      if (++checked == 2) break;
    }
    CHECK(checked > 0);
  }
}

TEST_CASE("cuda: the first family the search finds for each example, run on the host, matches the evaluator", "[cuda][search]") {
  for (const auto& [name, binding] : kExampleDims) {
    INFO("example " << name);
    SearchResult r = search_example(name);
    for (const auto& c : r.candidates) {
      std::optional<sgraph::Instance> inst = middle_instance(*c.graph, binding);
      if (!inst) continue;
      INFO("family\n" << sgraph::print(inst->graph));
      CHECK(emulated_error(*inst) < kHalfTol);
      break;
    }
  }
}

namespace {

// A batched tile times a shared one: the batch loop with a broadcast operand (stride 0).
const char* kBroadcastBatchFamily = R"(input A: f16[b, m, k]
input W: f16[k, n]
kernel 0: custom grid=[g1]
  a = load A map {grid: 0->g1, loop: -}
  w = load W map {grid: -, loop: -}
  y = matmul(a, w)
  save O: f32 = y map {grid: 0->g1, loop: -}
output O
)";

// The family with every f16 tensor stored as bf16.
std::string as_bf16(const std::string& family) {
  std::string s;
  for (size_t i = 0; i < family.size(); ++i) {
    if (family.compare(i, 3, "f16") == 0 && (i == 0 || family[i - 1] != 'b')) s += 'b';
    s += family[i];
  }
  return s;
}

std::string cuda_source(const std::string& family, const DimBindings& dims, const DimBindings& sizes, const CudaCodegenOptions& options = {}) {
  return generate_cuda_source(sgraph::instantiate(sgraph::parse(family), dims, sizes, kGpu), options).source;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct TensorCoreCase {
  std::string family;
  DimBindings dims, sizes;
  std::string path;  // the comment of the wmma path it takes
  double tol;
};

// One family per WMMA shape, more output tiles than warps, bf16, and a batch loop (dense and
// broadcast).
std::vector<TensorCoreCase> tensor_core_cases() {
  return {
        {fam::kRmsLinear, {{"n", 16}, {"d", 64}}, {{"g1", 4}, {"F1", 2}}, "wmma m16n16k16 __half", kHalfTol},
        {fam::kRmsLinear, {{"n", 48}, {"d", 64}}, {{"g1", 1}, {"F1", 2}}, "wmma m16n16k16 __half", kHalfTol},  // 3 x 4 tiles
        {fam::kRmsLinear, {{"n", 24}, {"d", 64}}, {{"g1", 1}, {"F1", 2}}, "wmma m8n32k16 __half", kHalfTol},   // 3 x 2 tiles
        {fam::kRmsLinear, {{"n", 32}, {"d", 64}}, {{"g1", 8}, {"F1", 2}}, "wmma m32n8k16 __half", kHalfTol},
        {as_bf16(fam::kRmsLinear), {{"n", 16}, {"d", 64}}, {{"g1", 4}, {"F1", 2}}, "wmma m16n16k16 __nv_bfloat16", 2e-2},
        {as_bf16(fam::kGatedMlp), {{"n", 24}, {"d", 64}}, {{"g1", 2}, {"F1", 4}}, "wmma m8n32k16 __nv_bfloat16", 2e-2},
        {fam::kAttention, {{"B", 2}, {"q", 32}, {"s", 128}, {"e", 16}}, {{"g1", 1}, {"g2", 2}, {"F1", 2}, {"g3", 2}, {"F2", 1}},
         "wmma m16n16k16 __half", kHalfTol},  // 2 x 2 x 2 tiles
        {kBroadcastBatchFamily, {{"b", 4}, {"m", 16}, {"k", 32}, {"n", 16}}, {{"g1", 2}}, "wmma m16n16k16 __half", 1e-5},
  };
}

}  // namespace

TEST_CASE("cuda: matmuls of staged 16-bit tiles take tensor cores where sizes and alignment fit", "[cuda]") {
  for (const TensorCoreCase& c : tensor_core_cases()) {
    std::string src = cuda_source(c.family, c.dims, c.sizes);
    INFO(c.family << "\n" << src);
    CHECK(has(src, std::string("// tensor cores: ").append(c.path)));
    CHECK(has(src, "wmma::mma_sync"));
    CHECK(has(src, "#include <mma.h>"));
    // rms_linear's product goes into its sum accumulator: the fragments start from it.
    if (c.family == fam::kRmsLinear) CHECK(has(src, "wmma::load_matrix_sync(acc, op, "));
    CudaCodegenOptions scalar;
    scalar.tensor_cores = false;
    std::string off = cuda_source(c.family, c.dims, c.sizes, scalar);
    CHECK_FALSE(has(off, "wmma"));
    CHECK(has(off, "// scalar matmul"));
  }
  // The attention's second matmul has an f32 operand (exp of the first): not WMMA, mma.sync.
  std::string attention =
      cuda_source(fam::kAttention, {{"B", 2}, {"q", 32}, {"s", 128}, {"e", 16}}, {{"g1", 1}, {"g2", 2}, {"F1", 2}, {"g3", 2}, {"F2", 1}});
  CHECK(has(attention, "// tensor cores: wmma"));  // Q Kt
  CHECK(has(attention, "// tensor cores: mma.sync"));  // exp(Q Kt) V
  // Sizes that fit no shape and m32n8k16 tiles 16 bytes apart (n = 24): no WMMA, mma.sync; f32
  // operands: scalar.
  for (const std::string& src : {cuda_source(fam::kRmsLinear, {{"n", 3}, {"d", 80}}, {{"g1", 2}, {"F1", 1}}),
                                 cuda_source(fam::kRmsLinear, {{"n", 32}, {"d", 48}}, {{"g1", 2}, {"F1", 3}})}) {
    INFO(src);
    CHECK_FALSE(has(src, "wmma"));
    CHECK_FALSE(has(src, "<mma.h>"));
    CHECK(has(src, "// tensor cores: mma.sync"));
  }
  std::string f32 = cuda_source(fam::kSplitContractionPartials, {{"n", 16}, {"d", 32}, {"m", 16}}, {{"g1", 2}});
  CHECK_FALSE(has(f32, "wmma"));
  CHECK_FALSE(has(f32, "// tensor cores: mma.sync"));
  CHECK(has(f32, "// scalar matmul"));
}

TEST_CASE("cuda: loads are staged with 16-byte vectors where every row allows", "[cuda]") {
  CudaCodegenOptions single;  // loads not run ahead (the pipeline has its own test)
  single.pipeline_stages = 1;
  std::string src = cuda_source(fam::kRmsLinear, {{"n", 16}, {"d", 64}}, {{"g1", 4}, {"F1", 2}}, single);
  INFO(src);
  // Into shared memory with cp.async: both loads of the loop body in flight at once, then one
  // wait and one barrier.
  CHECK(has(src, "prism_copy16_async(&v0["));  // x: rows of 32 halves
  CHECK(has(src, "prism_copy16_async(&v1["));  // w: rows of 16 halves
  const size_t first = src.find("prism_copy16_async(&v0["), second = src.find("prism_copy16_async(&v1[");
  const size_t wait = src.find("prism_copy_wait();", std::max(first, second));
  REQUIRE(wait != std::string::npos);
  CHECK(src.find("__syncthreads();", std::min(first, second)) > wait);
  CHECK(src.find("__syncthreads();", wait) != std::string::npos);
  // Rows of 18 halves (36 bytes): element by element.
  std::string odd = cuda_source(fam::kRmsLinear, {{"n", 3}, {"d", 36}}, {{"g1", 2}, {"F1", 2}});
  CHECK_FALSE(has(odd, "prism_copy16_async(&"));
  CHECK(emulated_error(fam::kRmsLinear, {{"n", 3}, {"d", 36}}, {{"g1", 2}, {"F1", 2}}) < kHalfTol);
  // f32 rows of 8 floats.
  CHECK(has(cuda_source(fam::kSplitContractionPartials, {{"n", 4}, {"d", 32}, {"m", 24}}, {{"g1", 4}}), "prism_copy16_async(&"));
}

// X @ W^T with nn.Linear's [out, in] weight, every tensor f16: W's tile is only a matmul's B.
constexpr const char* kLinearT = R"(input X: f16[n, d]
input W: f16[m, d]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: -, loop: 1}
  w = load W view [1, 0] map {grid: 1->g1, loop: 0}
  xw = matmul(x, w)
  acc = sum_accumulate(xw)
  save O: f16 = acc map {grid: 1->g1, loop: -}
output O
)";
// The same weight squared elementwise before the matmul: its tile has another use.
std::string squared_weight(std::string family) {
  const std::string product = "xw = matmul(x, w)";
  return family.replace(family.find(product), product.size(), "ww = mul(w, w)\n  xw = matmul(x, ww)");
}

TEST_CASE("cuda: a W^T tile only matmuls read is staged as W lies and read transposed; another is staged transposed by 16-byte vectors", "[cuda]") {
  const std::string squared_linear = squared_weight(kLinearT);
  CudaCodegenOptions single;
  single.pipeline_stages = 1;
  std::string half = fam::kLlama;  // its inputs stored as f16
  for (const char* name : {"input X: f32[", "input g: f32[", "input W: f32["}) {
    const size_t at = half.find(name);
    half.replace(at + std::strlen(name) - 4, 3, "f16");
  }
  for (const std::string& family : {std::string(fam::kLlama), half}) {
    INFO(family);
    // W [m, d] read as [d, m]: its tile of 16 x 32 copied as W's rows lie (16-byte vectors where
    // they fit), the matmul reading it through a transposed view.
    const std::string src = cuda_source(family, {{"n", 4}, {"d", 64}, {"m", 32}}, {{"g1", 2}, {"F1", 2}}, single);
    CHECK_FALSE(has(src, "prism_scatter16(&v"));
    CHECK(emulated_error(family, {{"n", 4}, {"d", 64}, {"m", 32}}, {{"g1", 2}, {"F1", 2}}, single) < kHalfTol);
    CHECK(emulated_error(family, {{"n", 4}, {"d", 64}, {"m", 32}}, {{"g1", 2}, {"F1", 2}}) < kHalfTol);  // pipelined
    CHECK(emulated_error(family, {{"n", 3}, {"d", 128}, {"m", 24}}, {{"g1", 3}, {"F1", 4}}) < kHalfTol);
  }
  CHECK(has(cuda_source(half, {{"n", 4}, {"d", 64}, {"m", 32}}, {{"g1", 2}, {"F1", 2}}, single), "prism_copy16_async(&v2["));  // W's rows
  // Decode: the decode form reads W's staged rows with ldmatrix as they are (no .trans).
  const DimBindings dims{{"n", 4}, {"d", 64}, {"m", 32}}, sizes{{"g1", 1}, {"F1", 2}};
  const std::string decode = cuda_source(kLinearT, dims, sizes);
  CHECK(has(decode, "prism_ldmatrix<4, false>(fa, brow + kk);"));
  CHECK(has(decode, "prism_ldmatrix<2, false>(fb, arow + kk);"));
  CHECK(emulated_error(kLinearT, dims, sizes) < kHalfTol);
  CudaCodegenOptions wide;
  wide.threads_per_block = 512;
  CHECK(emulated_error(kLinearT, dims, sizes, wide) < kHalfTol);
  // Prefill: WMMA takes the staged W^T tile as a column-major B.
  const DimBindings rows{{"n", 32}, {"d", 64}, {"m", 32}};
  const std::string prefill = cuda_source(kLinearT, rows, sizes);
  CHECK(has(prefill, "wmma::col_major> fb;"));
  CHECK(emulated_error(kLinearT, rows, sizes) < kHalfTol);
  CHECK(emulated_error(kLinearT, rows, {{"g1", 2}, {"F1", 1}}) < kHalfTol);
  // A W^T tile with another use is staged transposed, by 16-byte vectors along W's rows.
  const std::string squared = cuda_source(squared_linear, dims, sizes, single);
  CHECK(has(squared, "prism_scatter16(&v"));
  CHECK(emulated_error(squared_linear, dims, sizes, single) < kHalfTol);
  // Columns of 12 halves (24 bytes) along W's rows: element by element, and still right.
  const std::string odd = cuda_source(squared_linear, {{"n", 4}, {"d", 24}, {"m", 16}}, {{"g1", 2}, {"F1", 2}}, single);
  CHECK_FALSE(has(odd, "prism_scatter16(&v"));
  CHECK(emulated_error(squared_linear, {{"n", 4}, {"d", 24}, {"m", 16}}, {{"g1", 2}, {"F1", 2}}, single) < kHalfTol);
  if (!have_nvrtc()) return;
  compiles(sgraph::instantiate(sgraph::parse(half), {{"n", 8}, {"d", 256}, {"m", 64}}, {{"g1", 4}, {"F1", 2}}, kGpu));
  for (const std::string& src : {decode, prefill}) CHECK_NOTHROW(compile_to_ptx(src, "compute_90", cache_dir()));
}

TEST_CASE("cuda: a 16-bit tile only matmuls read gets rows free of bank conflicts, never at a pipeline stage's cost", "[cuda]") {
  // 8 rows 16 bytes each, one ldmatrix phase: rows 128 bytes apart share one slot, 64 two,
  // 32 four; an odd number of 16-byte slots apart, none.
  CHECK(ldmatrix_conflict_ways(256) == 8);
  CHECK(ldmatrix_conflict_ways(128) == 8);
  CHECK(ldmatrix_conflict_ways(64) == 4);
  CHECK(ldmatrix_conflict_ways(32) == 2);
  CHECK(ldmatrix_conflict_ways(272) == 1);
  CHECK(ldmatrix_conflict_ways(80) == 1);
  // Decode X @ W^T, nn.Linear's W: x's tile 8 x 128 and W's 64 x 128 (staged as W lies), rows
  // of 256 bytes padded to 272; both copied by 16-byte vectors and read by ldmatrix at that pitch.
  const DimBindings dims{{"n", 8}, {"d", 256}, {"m", 64}}, sizes{{"g1", 1}, {"F1", 2}};
  const std::string src = cuda_source(kLinearT, dims, sizes);
  INFO(src);
  CHECK(has(src, "prism_copy16_async(&v0[r * 136 + c]"));
  CHECK(has(src, "prism_copy16_async(&v1[r * 136 + c]"));
  CHECK(has(src, "brow = &v1[(n0 + (lane & 7) + (lane >> 3 & 1) * 8) * 136 + (lane >> 4) * 8];"));
  CHECK(has(src, "arow = &v0[(m0 + (lane & 7)) * 136 + (lane >> 3 & 1) * 8];"));
  CHECK(emulated_error(kLinearT, dims, sizes) < kHalfTol);  // three stages, padded slots
  CudaCodegenOptions dense;
  dense.pad_rows = false;
  CHECK(has(cuda_source(kLinearT, dims, sizes, dense), "prism_copy16_async(&v1[r * 128 + c]"));
  CudaCodegenOptions wide;
  wide.threads_per_block = 256;
  CHECK(emulated_error(kLinearT, dims, sizes, wide) < kHalfTol);
  // An [in, out] weight read transposed by ldmatrix.trans, padded; a tile with another use (W
  // squared elementwise) dense.
  // x's tile has another reader here (the rms accumulator) and stays dense.
  const std::string rms = cuda_source(fam::kRmsLinear, {{"n", 8}, {"d", 256}}, {{"g1", 2}, {"F1", 2}});
  CHECK(has(rms, "prism_ldmatrix<4, true>(fa, brow + kk * 136);"));
  CHECK(has(rms, "prism_copy16_async(&v0[r * 128 + c]"));
  CHECK(emulated_error(fam::kRmsLinear, {{"n", 8}, {"d", 256}}, {{"g1", 2}, {"F1", 2}}) < kHalfTol);
  const std::string squared = cuda_source(squared_weight(kLinearT), dims, sizes), scatter = "prism_scatter16(&v";
  const size_t at = squared.find(scatter);
  REQUIRE(at != std::string::npos);
  const std::string w_copy = squared.substr(at, squared.find('\n', at) - at);
  CHECK(has(cuda_source(squared_weight(kLinearT), dims, sizes, dense), w_copy));  // W's tile: the same copy as unpadded
  CHECK(has(squared, "prism_copy16_async(&v0[r * 136 + c]"));                   // x's: padded
  // Padding that would cost the loop its third stage is not taken.
  const backend::kir::Program lowered = backend::lower(sgraph::instantiate(sgraph::parse(kLinearT), dims, {{"g1", 1}, {"F1", 4}}, kGpu), backend::cuda_lowering());
  const backend::kir::CustomKernel& k = lowered.kernels[0].block;
  const int64_t three = plan_double_buffer(k, 1 << 20, 3).shared_bytes;
  const backend::kir::Program roomy = pad_tile_rows(lowered, 1 << 20, 3), tight = pad_tile_rows(lowered, three, 3);
  CHECK(roomy.kernels[0].block.fast_memory_bytes > k.fast_memory_bytes);
  CHECK(plan_double_buffer(roomy.kernels[0].block, 1 << 20, 3).stages == 3);
  CHECK(tight.kernels[0].block.fast_memory_bytes == k.fast_memory_bytes);
  CHECK(plan_double_buffer(tight.kernels[0].block, three, 3).stages == 3);
  if (!have_nvrtc()) return;
  CHECK_NOTHROW(compile_to_ptx(src, "compute_90", cache_dir()));
  CHECK_NOTHROW(compile_to_ptx(rms, "compute_90", cache_dir()));
}

TEST_CASE("cuda: a block's scalar matmul with several outputs per thread advances them in one pass over k, and matches", "[cuda]") {
  CudaCodegenOptions options;
  options.tensor_cores = false;
  // 8 x 64 outputs on 64 threads: 8 each, every thread full.
  options.threads_per_block = 64;
  std::string full = cuda_source(fam::kRmsLinear, {{"n", 8}, {"d", 64}}, {{"g1", 1}, {"F1", 2}}, options);
  INFO(full);
  CHECK(has(full, "// scalar matmul: 8 outputs per thread in one pass over k"));
  CHECK_FALSE(has(full, " ? int(threadIdx.x)"));
  CHECK(emulated_error(fam::kRmsLinear, {{"n", 8}, {"d", 64}}, {{"g1", 1}, {"F1", 2}}, options) < kHalfTol);
  // 2 x 40 outputs on 64 threads: the second output of the last 48 threads repeats the last one,
  // never stored.
  std::string ragged = cuda_source(fam::kRmsLinear, {{"n", 4}, {"d", 40}}, {{"g1", 2}, {"F1", 1}}, options);
  CHECK(has(ragged, "// scalar matmul: 2 outputs per thread in one pass over k"));
  CHECK(has(ragged, "if (int(threadIdx.x) + 64 < 80) "));
  CHECK(emulated_error(fam::kRmsLinear, {{"n", 4}, {"d", 40}}, {{"g1", 2}, {"F1", 1}}, options) < kHalfTol);
  // More than kMatmulOutputsPerThread each: a thread per output element, one after the other.
  options.threads_per_block = 32;
  CHECK(has(cuda_source(fam::kRmsLinear, {{"n", 8}, {"d", 64}}, {{"g1", 1}, {"F1", 2}}, options), "// scalar matmul: a thread per output element"));
}

TEST_CASE("cuda: matmuls WMMA cannot take (few rows, an f32 operand computed in the block) run through mma.sync and match", "[cuda]") {
  const std::string mma = "// tensor cores: mma.sync m16n8k16";
  // 4 rows a block (decode) against 8 columns (no multiple of 16, so not the ldmatrix form),
  // 16-bit tiles: rows 4..15 of the fragment read as zeros.
  std::string decode = cuda_source(fam::kRmsLinear, {{"n", 4}, {"d", 40}}, {{"g1", 5}, {"F1", 2}});
  CHECK(has(decode, mma + ", operands rounded to __half"));
  CHECK(has(decode, "r1 < 4 && k0 < 20 ?"));
  CHECK(emulated_error(fam::kRmsLinear, {{"n", 4}, {"d", 40}}, {{"g1", 5}, {"F1", 2}}) < kHalfTol);
  // Columns and k that are no multiple of the fragment's (20 of 8, 20 of 16).
  std::string ragged = cuda_source(fam::kRmsLinear, {{"n", 3}, {"d", 20}}, {{"g1", 1}, {"F1", 1}});
  CHECK(has(ragged, "c < 20 ?"));
  CHECK(has(ragged, "if (oc + 1 < 20) "));
  CHECK(emulated_error(fam::kRmsLinear, {{"n", 3}, {"d", 20}}, {{"g1", 1}, {"F1", 1}}) < kHalfTol);
  CHECK(emulated_error(fam::kGatedMlp, {{"n", 4}, {"d", 40}}, {{"g1", 2}, {"F1", 1}}) < kHalfTol);
  // Attention: exp(Q Kt) is computed in f32; the program stores everything at f16, so it is
  // rounded to f16 for the matmul with V, as the reference rounds every op.
  const DimBindings dims{{"B", 2}, {"q", 5}, {"s", 64}, {"e", 16}}, sizes{{"g1", 1}, {"g2", 2}, {"F1", 2}, {"g3", 2}, {"F2", 1}};
  std::string attention = cuda_source(fam::kAttention, dims, sizes);
  CHECK(has(attention, mma));
  CHECK(emulated_error(fam::kAttention, dims, sizes) < kHalfTol);
  // bf16 tiles take the bf16 instruction.
  const std::string bf16 = test::retyped(fam::kRmsLinear, "f16", "bf16");
  CHECK(has(cuda_source(bf16, {{"n", 4}, {"d", 64}}, {{"g1", 2}, {"F1", 2}}), "prism_mma16816<true>"));
  CHECK(emulated_error(bf16, {{"n", 4}, {"d", 64}}, {{"g1", 2}, {"F1", 2}}) < 2e-2);
  // An f32 program keeps f32 operands off the tensor cores.
  const std::string f32 = test::retyped(fam::kRmsLinear, "f16", "f32");
  std::string scalar = cuda_source(f32, {{"n", 4}, {"d", 64}}, {{"g1", 2}, {"F1", 2}});
  CHECK_FALSE(has(scalar, mma));
  CHECK(has(scalar, "// scalar matmul"));
}

TEST_CASE("cuda: decode attention's blocks of one head take the decode form: K's and V's rows through ldmatrix, and match", "[cuda]") {
  // g1 = B: a block's tiles are [1, q, e], [1, e, s/g2/F1], [1, s/g2/F1, e], a batch of one: the
  // matmuls are the decode form's two dims (Kt's columns and V's as the instruction's rows).
  const std::string form = "// tensor cores: mma.sync m16n8k16 through ldmatrix, __half, b's columns as the instruction's rows";
  for (int64_t q : {1, 3}) {
    INFO("q=" << q);
    const DimBindings dims{{"B", 4}, {"q", q}, {"s", 256}, {"e", 16}}, sizes{{"g1", 4}, {"g2", 2}, {"F1", 2}, {"g3", 2}, {"F2", 1}};
    const std::string src = cuda_source(fam::kAttention, dims, sizes);
    INFO(src);
    CHECK(has(src, form + "\n"));                              // Q Kt: Q staged, read by ldmatrix too
    CHECK(has(src, form + ", a's rows rounded in registers"));  // exp(S) V: exp(S) in f32, rounded
    CHECK(has(src, "prism_ldmatrix<4, true>(fa, brow + kk * 72);"));  // Kt's rows of 64 halves, padded
    CHECK(has(src, "prism_ldmatrix<4, true>(fa, brow + kk * 24);"));  // V's rows of 16, padded
    CHECK(emulated_error(fam::kAttention, dims, sizes) < kHalfTol);
  }
  // Two heads a block: a batch of two, which the decode form does not take.
  const std::string two = cuda_source(fam::kAttention, {{"B", 4}, {"q", 1}, {"s", 256}, {"e", 16}}, {{"g1", 2}, {"g2", 2}, {"F1", 2}, {"g3", 2}, {"F2", 1}});
  CHECK_FALSE(has(two, "through ldmatrix"));
  CHECK(emulated_error(fam::kAttention, {{"B", 4}, {"q", 1}, {"s", 256}, {"e", 16}}, {{"g1", 2}, {"g2", 2}, {"F1", 2}, {"g3", 2}, {"F2", 1}}) < kHalfTol);
}

TEST_CASE("cuda: a decode block's mma.sync matmul with more warps than output tiles splits k over them, and matches", "[cuda][schedule]") {
  using detail::mma_k_split;
  CHECK(mma_k_split(8, 32, 128) == 1);   // 4 warps, 8 tiles: a warp a tile at most
  CHECK(mma_k_split(8, 32, 512) == 2);   // 16 warps: two a tile, k's two 16-wide steps one each
  CHECK(mma_k_split(2, 128, 512) == 8);  // 2 tiles, 8 steps of k: 8 warps a tile
  CHECK(mma_k_split(2, 40, 512) == 2);   // k of 40: three steps, two slices
  const std::string split = "k split over ";
  CudaCodegenOptions wide;
  wide.threads_per_block = 512;
  // 4 rows a block against 16 columns of W (two 16 x 8 tiles) over k = 128 and 32, against 8
  // columns (one tile) over k = 40 (three 16-wide steps, the last cut), f16.
  for (const auto& [d, g1, f1, parts] : {std::tuple{int64_t(128), int64_t(8), int64_t(1), 8}, std::tuple{int64_t(64), int64_t(4), int64_t(2), 2},
                                         std::tuple{int64_t(40), int64_t(5), int64_t(1), 2}}) {
    const DimBindings at{{"n", 4}, {"d", d}}, with{{"g1", g1}, {"F1", f1}};
    INFO("d=" << d << " g1=" << g1 << " F1=" << f1);
    const std::string code = cuda_source(fam::kRmsLinear, at, with, wide);
    CHECK(has(code, split + std::to_string(parts) + " warps a tile"));
    CHECK(has(code, "atomicAdd(&"));
    CHECK(emulated_error(fam::kRmsLinear, at, with, wide) < kHalfTol);
    if (!have_nvrtc()) continue;
    CHECK(family_compiles(fam::kRmsLinear, at, with, wide) > 0);  // NVRTC, compute_90
    CHECK_NOTHROW(compile_to_ptx(code, "compute_80", cache_dir()));
  }
  // A layer as Llama writes it (f32 statistics of f16 activations with outliers, eps, a gain, an
  // nn.Linear [out, in] weight) on activations whose f16 sum of squares overflows, at 512 threads.
  const test::WideLayer& llama = test::wide_layers().front();
  const Program lowered = test::lowered_text(llama.text, llama.name);
  const auto named = test::wide_inputs(lowered);
  const Tensor want = interpret(lowered, test::wide_dims(), named).at(0);
  int checked = 0, split_families = 0;
  for (const auto& c : gpu_search(llama.text, llama.name).candidates) {
    std::optional<sgraph::Instance> inst = middle_instance(*c.graph, test::wide_dims());
    if (!inst) continue;
    INFO("family\n" << sgraph::print(inst->graph));
    CHECK(test::relative_error(emulated_outputs(*inst, test::graph_inputs(inst->graph, named), wide).at(0), want) < kHalfTol);
    split_families += has(generate_cuda_source(*inst, wide).source, split);
    if (++checked == 2) break;
  }
  CHECK(checked > 0);
  CHECK(split_families > 0);
  // 128 threads: one tile (16 columns through ldmatrix) splits k over the four warps; four tiles
  // keep a warp a tile, as before.
  CHECK(has(cuda_source(fam::kRmsLinear, {{"n", 4}, {"d", 128}}, {{"g1", 8}, {"F1", 1}}), split + "4 warps a tile"));
  CHECK(emulated_error(fam::kRmsLinear, {{"n", 4}, {"d", 128}}, {{"g1", 8}, {"F1", 1}}) < kHalfTol);
  CHECK_FALSE(has(cuda_source(fam::kRmsLinear, {{"n", 4}, {"d", 128}}, {{"g1", 2}, {"F1", 1}}), split));
}

// The decode form (emit_ops.h, emit_ldmatrix_mma): a block of fewer than 16 rows against a staged
// 16-bit weight runs out^T = W^T x^T on mma.sync, W's columns as the instruction's 16 rows through
// ldmatrix.trans, x's rows as its 8 columns through ldmatrix (a staged x) or gathered and rounded
// (an x computed in the block).
TEST_CASE("cuda: a decode block's matmul takes W's columns as mma.sync's rows through ldmatrix, and matches", "[cuda]") {
  const std::string form = "// tensor cores: mma.sync m16n8k16 through ldmatrix";
  CHECK(detail::ldmatrix_mma_fits(8, 32, 32));
  CHECK(detail::ldmatrix_mma_fits(1, 16, 16));
  CHECK_FALSE(detail::ldmatrix_mma_fits(16, 32, 32));  // a prefill block: WMMA
  CHECK_FALSE(detail::ldmatrix_mma_fits(8, 24, 32));   // columns no multiple of 16
  CHECK_FALSE(detail::ldmatrix_mma_fits(8, 32, 40));
  // 8, 1, 5 and 12 rows (12: two groups of 8, rows past 11 read row 11 into columns never stored)
  // against 32 columns (two 16-row tiles of the instruction), f16 and bf16, rms_linear and SwiGLU.
  for (int64_t n : {8, 1, 5, 12}) {
    INFO("n=" << n);
    const DimBindings dims{{"n", n}, {"d", 64}}, sizes{{"g1", 2}, {"F1", 2}};
    const std::string src = cuda_source(fam::kRmsLinear, dims, sizes);
    CHECK(has(src, form + ", __half, b's columns as the instruction's rows"));
    CHECK(has(src, "prism_ldmatrix<4, true>(fa, brow + kk * 40);"));  // W's rows of 32 padded (pad_tiles.h)
    CHECK(has(src, "prism_ldmatrix<2, false>(fb, arow + kk);"));
    CHECK_FALSE(has(src, "wmma"));
    // The loop's product adds into the accumulator: no tile of its own, no pass that adds it.
    CHECK(has(src, ", added into the accumulator"));
    CHECK_FALSE(has(src, "// acc = sum_accumulate"));
    CHECK(emulated_error(fam::kRmsLinear, dims, sizes) < kHalfTol);
  }
  const std::string bf16 = test::retyped(fam::kRmsLinear, "f16", "bf16");
  CHECK(has(cuda_source(bf16, {{"n", 8}, {"d", 64}}, {{"g1", 2}, {"F1", 2}}), form + ", __nv_bfloat16"));
  CHECK(emulated_error(bf16, {{"n", 8}, {"d", 64}}, {{"g1", 2}, {"F1", 2}}) < 2e-2);
  CHECK(has(cuda_source(fam::kGatedMlp, {{"n", 8}, {"d", 64}}, {{"g1", 2}, {"F1", 4}}), form));
  CHECK(emulated_error(fam::kGatedMlp, {{"n", 8}, {"d", 64}}, {{"g1", 2}, {"F1", 4}}) < kHalfTol);
  // k over the block's warps: 2 tiles at 512 threads take 8 warps each, one 16-wide step each.
  CudaCodegenOptions wide;
  wide.threads_per_block = 512;
  const DimBindings at{{"n", 4}, {"d", 128}}, with{{"g1", 4}, {"F1", 1}};
  CHECK(has(cuda_source(fam::kRmsLinear, at, with, wide), "k split over 8 warps a tile"));
  CHECK(emulated_error(fam::kRmsLinear, at, with, wide) < kHalfTol);
  // Llama's norm with a gain and an nn.Linear [out, in] weight, all stored at f16: x * g is
  // computed in f32 and rounded in registers (the program's own rounding); W's tile is staged as
  // W lies, its rows read by ldmatrix as they are.
  std::string llama = test::retyped(fam::kLlama, "f32", "f16");
  llama.replace(llama.find("save O: f32"), 11, "save O: f16");
  const DimBindings ld{{"n", 4}, {"d", 64}, {"m", 32}}, ls{{"g1", 1}, {"F1", 2}};
  const std::string gathered = cuda_source(llama, ld, ls);
  CHECK(has(gathered, form + ", __half, b's columns as the instruction's rows, a's rows rounded in registers"));
  CHECK(has(gathered, "prism_ldmatrix<4, false>(fa, brow + kk);"));
  CHECK(emulated_error(llama, ld, ls) < kHalfTol);
  CHECK(emulated_error(llama, ld, ls, wide) < kHalfTol);
  if (!have_nvrtc()) return;
  const auto ptx = [](const std::string& src) { return compile_to_ptx(src, "compute_90", cache_dir()).ptx; };
  const std::string in_out = ptx(cuda_source(fam::kRmsLinear, {{"n", 8}, {"d", 64}}, {{"g1", 2}, {"F1", 2}})), out_in = ptx(gathered);
  CHECK(has(in_out, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
  CHECK(has(out_in, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
  for (const std::string& p : {in_out, out_in}) CHECK(has(p, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
}

TEST_CASE("cuda: a loop's loads run two iterations ahead into three slots where they fit (and cost no second block), else one into two, and match", "[cuda]") {
  // rms_linear over 4 iterations: W's and X's tiles staged in the body, three times.
  const DimBindings dims{{"n", 8}, {"d", 64}}, sizes{{"g1", 2}, {"F1", 4}};
  std::string src = cuda_source(fam::kRmsLinear, dims, sizes);
  INFO(src);
  CHECK(has(src, "// loads 2 iteration(s) ahead, into 3 slots per tile"));
  CHECK(has(src, "_next = reinterpret_cast<"));
  CHECK(has(src, "{  // w = load W, iteration 1"));  // the prologue's second group
  CHECK(has(src, "(f + 2) * "));                      // the box two iterations on
  CHECK(has(src, "prism_copy_wait_prior<2>();"));
  CHECK(emulated_error(fam::kRmsLinear, dims, sizes) < kHalfTol);
  CHECK(emulated_error(fam::kGatedMlp, {{"n", 4}, {"d", 48}}, {{"g1", 2}, {"F1", 3}}) < kHalfTol);
  CHECK(emulated_error(fam::kAttention, {{"B", 2}, {"q", 3}, {"s", 256}, {"e", 8}}, {{"g1", 1}, {"g2", 2}, {"F1", 4}, {"g3", 2}, {"F2", 1}}) <
        kHalfTol);
  // Two stages (asked for, or all a loop of two iterations has): one iteration ahead.
  CudaCodegenOptions two;
  two.pipeline_stages = 2;
  const std::string doubled = cuda_source(fam::kRmsLinear, dims, sizes, two);
  CHECK(has(doubled, "// loads 1 iteration(s) ahead, into 2 slots per tile"));
  CHECK(has(doubled, "(f + 1) * "));
  CHECK(has(doubled, "prism_copy_wait_prior<1>();"));
  CHECK(emulated_error(fam::kRmsLinear, dims, sizes, two) < kHalfTol);
  CHECK(has(cuda_source(fam::kRmsLinear, dims, {{"g1", 2}, {"F1", 2}}), "into 2 slots per tile"));
  // Turned off, or no extra slot fits, or one iteration: loads wait for the math.
  CudaCodegenOptions single;
  single.pipeline_stages = 1;
  CHECK_FALSE(has(cuda_source(fam::kRmsLinear, dims, sizes, single), "_next"));
  const int64_t own = generate_cuda_source(sgraph::instantiate(sgraph::parse(fam::kRmsLinear), dims, sizes, kGpu), single).kernels[0].shared_bytes;
  CudaCodegenOptions small;  // the kernel's own tiles fit, twice its loads do not
  small.shared_memory_bytes = own + 64;
  CHECK_FALSE(has(cuda_source(fam::kRmsLinear, dims, sizes, small), "_next"));
  CudaCodegenOptions middle;  // twice its loads fit, three times do not: two stages
  middle.shared_memory_bytes = generate_cuda_source(sgraph::instantiate(sgraph::parse(fam::kRmsLinear), dims, sizes, kGpu), two).kernels[0].shared_bytes;
  CHECK(has(cuda_source(fam::kRmsLinear, dims, sizes, middle), "into 2 slots per tile"));
  CudaCodegenOptions pair = middle;  // two blocks of two stages fit, of three stages only one: two
  pair.shared_memory_bytes = 2 * middle.shared_memory_bytes;
  CHECK(has(cuda_source(fam::kRmsLinear, dims, sizes, pair), "into 2 slots per tile"));
  CHECK_FALSE(has(cuda_source(fam::kRmsLinear, dims, {{"g1", 2}, {"F1", 1}}), "_next"));
}

// docs/tuning.md, "Schedules": blocks_per_sm=2.
TEST_CASE("cuda: the schedule of 2 blocks an SM gives a block half an SM's shared memory, keeps registers to two blocks, and matches",
          "[cuda][schedule]") {
  const CudaBackend cuda;
  const backend::TargetDescription h100 = cuda_h100_data();
  const backend::Schedule two{{"threads", 256}, {"blocks_per_sm", 2}};
  CHECK_FALSE(cuda.scheduled_target({}, h100));
  CHECK_FALSE(cuda.scheduled_target({{"threads", 512}}, h100));
  const std::optional<backend::TargetDescription> half = cuda.scheduled_target(two, h100);
  REQUIRE(half);
  CHECK(half->fast_memory_bytes == 233472 / 2 - 1024);  // an SM's 228 KiB, less 1 KiB the system keeps for each block
  CHECK(half->cores == 2 * h100.cores);
  CHECK(half->bandwidth_gbs == h100.bandwidth_gbs);
  const CudaCodegenOptions options = cuda.codegen_options(h100, two);
  CHECK(options.threads_per_block == 256);
  CHECK(options.blocks_per_sm == 2);
  CHECK(options.shared_memory_bytes == half->fast_memory_bytes);
  CHECK(cuda.codegen_options(h100, {}).shared_memory_bytes == h100.fast_memory_bytes);
  CHECK(cuda.codegen_options(h100, {}).blocks_per_sm == 1);
  // rms_linear over 4 iterations on an SM whose whole holds three stages of its loads and whose
  // half holds none: the same sizes lose their pipeline at 2 blocks an SM (the tuner ranks the
  // schedule's instances on its own target for this).
  const DimBindings dims{{"n", 8}, {"d", 64}}, sizes{{"g1", 2}, {"F1", 4}};
  const sgraph::Instance inst = sgraph::instantiate(sgraph::parse(fam::kRmsLinear), dims, sizes, kGpu);
  backend::TargetDescription small = h100;
  CudaCodegenOptions single;
  single.pipeline_stages = 1;
  const int64_t own = generate_cuda_source(inst, single).kernels[0].shared_bytes, three = generate_cuda_source(inst, {}).kernels[0].shared_bytes;
  small.fast_memory_bytes = std::max((three + 127) / 128 * 128, 2 * ((own + 127) / 128 * 128 + 1024) - 1024);
  const CudaCodegenOptions whole = cuda.codegen_options(small, {}), halves = cuda.codegen_options(small, two);
  CHECK(has(generate_cuda_source(inst, whole).source, "into 3 slots per tile"));
  const CudaSource src = generate_cuda_source(inst, halves);
  INFO(src.source);
  CHECK_FALSE(has(src.source, "_next"));
  CHECK(has(src.source, "__launch_bounds__(256, 2)"));
  CHECK(src.kernels[0].threads == 256);
  CHECK(src.kernels[0].shared_bytes <= halves.shared_memory_bytes);
  CHECK(emulated_error(inst, halves) < kHalfTol);
  CHECK(emulated_error(fam::kGatedMlp, {{"n", 4}, {"d", 48}}, {{"g1", 2}, {"F1", 3}}, halves) < kHalfTol);
  if (have_nvrtc()) family_compiles(fam::kRmsLinear, dims, sizes, halves);
}

TEST_CASE("cuda: a block's loads in flight are its pipeline's stages ahead, or one iteration's", "[cuda][review]") {
  // The gated MLP at n = 8, d = 64, 4 column blocks of 16: an iteration stages X [8, 64/F1] and
  // two W tiles [64/F1, 16], all f16.
  auto loads = [](int64_t f1, int stages) {
    const sgraph::Instance inst = sgraph::instantiate(sgraph::parse(fam::kGatedMlp), {{"n", 8}, {"d", 64}}, {{"g1", 4}, {"F1", f1}}, kGpu);
    const backend::kir::CustomKernel k = backend::lower(inst, backend::cuda_lowering()).kernels.at(0).block;
    return loads_in_flight(k, plan_double_buffer(k, 232448, stages));
  };
  const LoadsInFlight four = loads(4, 3);  // 1280 bytes an iteration, two ahead in three slots
  CHECK(four.ahead == 2560);
  CHECK(four.total == 4 * 1280);
  CHECK(loads(4, 1).ahead == 1280);        // not pipelined: one iteration's, issued together
  CHECK(loads(2, 3).ahead == 2560);        // two iterations: two slots, one ahead
  CHECK(loads(1, 3).ahead == 5120);        // no loop to pipeline: everything before the math
}

TEST_CASE("cuda: tensor-core matmuls and vector loads, run on the host, match the evaluator", "[cuda]") {
  CudaCodegenOptions scalar;
  scalar.tensor_cores = false;
  for (const TensorCoreCase& c : tensor_core_cases()) {
    INFO(c.family << c.path);
    CHECK(emulated_error(c.family, c.dims, c.sizes) < c.tol);
    CHECK(emulated_error(c.family, c.dims, c.sizes, scalar) < c.tol);
  }
}

// The CUDA backend's schedules (cuda_backend.h): every statement form at 256 and 512 threads per
// block: scalar and tensor-core matmuls, mma.sync, double-buffered loads, row reductions, an online
// softmax, a library kernel and a cross-block sum.
TEST_CASE("cuda: generated code at 256 and 512 threads per block, run on the host, matches the evaluator", "[cuda][schedule]") {
  std::string combined = std::string(fam::kSplitContractionPartials) + "kernel 1: O: f32 = sum(P, axis=0, keepdims=false)\noutput O\n";
  for (int threads : {256, 512}) {
    INFO(threads << " threads per block");
    CudaCodegenOptions options;
    options.threads_per_block = threads;
    CHECK(has(cuda_source(fam::kRmsLinear, {{"n", 8}, {"d", 64}}, {{"g1", 2}, {"F1", 4}}, options), "__launch_bounds__(" + std::to_string(threads) + ")"));
    CHECK(emulated_error(fam::kRmsLinear, {{"n", 8}, {"d", 64}}, {{"g1", 2}, {"F1", 4}}, options) < kHalfTol);
    CHECK(emulated_error(fam::kRmsLinear, {{"n", 4}, {"d", 64}}, {{"g1", 2}, {"F1", 2}}, options) < kHalfTol);  // mma.sync, 2 rows
    CHECK(emulated_error(fam::kGatedMlp, {{"n", 4}, {"d", 48}}, {{"g1", 2}, {"F1", 3}}, options) < kHalfTol);
    CHECK(emulated_error(fam::kAttention, {{"B", 4}, {"q", 1}, {"s", 64}, {"e", 16}}, {{"g1", 2}, {"g2", 2}, {"F1", 2}, {"g3", 2}, {"F2", 2}},
                         options) < kHalfTol);
    CHECK(emulated_error(kMaxRmsFamily, {{"n", 6}, {"d", 256}}, {{"g1", 3}, {"F1", 4}}, options) < 2e-2);
    CHECK(emulated_error(kLibraryFamily, {{"b", 3}, {"m", 5}, {"k", 7}, {"n", 19}}, {}, options) < 2e-2);
    CHECK(emulated_error(combined, {{"n", 4}, {"d", 32}, {"m", 24}}, {{"g1", 4}}, options) < 1e-5);
    for (const TensorCoreCase& c : tensor_core_cases()) {
      INFO(c.family << c.path);
      CHECK(emulated_error(c.family, c.dims, c.sizes, options) < c.tol);
    }
  }
}

TEST_CASE("cuda: tensor-core families compile with NVRTC", "[cuda]") {
  if (!have_nvrtc()) return;
  for (const TensorCoreCase& c : tensor_core_cases()) {
    INFO(c.path);
    family_compiles(c.family, c.dims, c.sizes);
  }
}

TEST_CASE("cuda: the host emulation stops with a message on a misaligned wmma pointer, ldm or vector copy", "[cuda]") {
  test::TempDir dir;
  const std::string shim = std::string(PRISM_SOURCE_DIR) + "/tests/engine/backend/cuda_emulation";
  std::string program = backend::cuda::detail::prelude() + R"(#include <mma.h>
#include <string>
namespace wmma = nvcuda::wmma;
alignas(32) __half tile[512];
alignas(32) __half copy[16];
int main(int, char** argv) {
  std::string what = argv[1];
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> f;
  if (what == "aligned") {
    wmma::load_matrix_sync(f, tile + 16, 16);
    prism_copy16(copy, tile + 8);
  }
  if (what == "wmma pointer") wmma::load_matrix_sync(f, tile + 8, 16);
  if (what == "ldm") wmma::load_matrix_sync(f, tile, 12);
  if (what == "vector copy") prism_copy16(copy, tile + 1);
  return 0;
}
)";
  std::ofstream(dir / "misaligned.cpp") << program;
  const char* cxx = std::getenv("CXX");
  ProcessResult built = run_process({cxx && *cxx ? cxx : "c++", "-std=c++20", "-pthread", "-include", shim + "/prism_cuda_host.h", "-I", shim,
                                     dir / "misaligned.cpp", "-o", dir / "misaligned"});
  INFO(built.err);
  REQUIRE(built.exit_code == 0);
  CHECK(run_process({dir / "misaligned", "aligned"}).exit_code == 0);
  for (const auto& [what, says] : std::vector<std::pair<std::string, std::string>>{
             {"wmma pointer", "is not 32-byte aligned"}, {"ldm", "ldm 12 is not a multiple of 8"}, {"vector copy", "is not 16-byte aligned"}}) {
    ProcessResult r = run_process({dir / "misaligned", what});
    INFO(what << ": " << r.err);
    CHECK(r.exit_code != 0);
    CHECK(has(r.err, says));
  }
}

TEST_CASE("cuda: the bandwidth kernel compiles; with a device it measures a positive rate, without one it says why", "[cuda]") {
  if (have_nvrtc()) {
    const std::string source = read_bandwidth_source(int64_t(1) << 20);
    CHECK_THAT(source, Catch::Contains("65536LL"));  // 1 MiB in 16-byte vectors
    PtxResult ptx = compile_to_ptx(source, "compute_90", cache_dir());
    CHECK(ptx.ptx.find("prism_read_bandwidth") != std::string::npos);
  }
  if (!cuda_status().available) {
    CHECK_THROWS_AS(CudaDevice(), Error);
    return;
  }
  if (!nvrtc_status().available) return;
  CudaDevice device;
  const double gbs = measure_read_bandwidth_gbs(device, int64_t(256) << 20, 3);
  WARN("device read bandwidth: " << gbs << " GB/s");
  CHECK(gbs > 100);  // every CUDA GPU prism targets reads far faster
}
