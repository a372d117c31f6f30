// The eager baseline on the GPU without a GPU: for every example program at a small binding, the
// generated CUDA source compiles with NVRTC, its plan names only tensors it declares, and the
// plan survives its text form; run on the host (cuda_emulation/prism_cuda_host.h, the matmul
// steps as f32 loops with the plan's strides and offsets) it matches the reference interpreter
// at the declared dtypes. Warns where NVRTC is absent.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <set>

#include "wide_activations.h"
#include "../sgraph/sgraph_helpers.h"
#include "../interp_helpers.h"
#include "../search/search_helpers.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cuda/eager.h"
#include "engine/backend/eager_plan.h"
#include "engine/backend/cuda/nvrtc.h"
#include "engine/error.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/lower_composites.h"
#include "engine/tune/compare.h"
#include "support/subprocess.h"

using namespace prism;
using namespace prism::backend::cuda;
namespace eager = prism::backend::eager;

namespace {

const std::map<std::string, DimBindings>& kSmall = test::small_example_dims();

void check_plan_names(const CudaPlan& plan) {
  std::set<std::string> names;
  for (const auto* list : {&plan.inputs, &plan.outputs, &plan.scratch})
    for (const auto& t : *list) CHECK(names.insert(t.name).second);
  for (const auto& s : plan.steps) {
    if (s.is_gemm) {
      CHECK(names.count(s.gemm.a));
      CHECK(names.count(s.gemm.b));
      CHECK(names.count(s.gemm.c));
    } else {
      for (const auto& p : s.kernel.params) CHECK(names.count(p));
    }
  }
}

}  // namespace

namespace {

// The baseline of one program: its plan, names and text form, and its source through NVRTC.
void check_eager(const Program& p, const DimBindings& dims) {
  CudaEager eager = generate_cuda_eager(p, dims);
  CHECK(eager.plan.inputs.size() == p.inputs.size());
  CHECK(eager.plan.outputs.size() == p.outputs.size());
  CHECK(eager.plan.inputs.front().dtype == p.value(p.inputs.front()).type.dtype);
  bool has_matmul = false;
  for (const Value& v : p.values) has_matmul |= v.op == Op::Matmul;
  CHECK(eager.plan.uses_cublas() == has_matmul);
  check_plan_names(eager.plan);
  eager.plan.ptx = "// ptx\n.version 8.0\n";
  CudaPlan back = parse_plan(plan_text(eager.plan));
  CHECK(plan_text(back) == plan_text(eager.plan));
  NvrtcStatus nvrtc = nvrtc_status();
  if (!nvrtc.available) {
    WARN("NVRTC not compiled: " << nvrtc.detail);
    return;
  }
  INFO(eager.source);
  PtxResult ptx;
  try {
    static test::TempDir cache;
    ptx = compile_to_ptx(eager.source, "compute_90", cache.path());
  } catch (const Error& e) {
    FAIL(e.what());
  }
  for (const auto& s : eager.plan.steps)
    if (!s.is_gemm) CHECK(ptx.ptx.find(s.kernel.name) != std::string::npos);
}

}  // namespace

TEST_CASE("cuda eager: every example's baseline compiles with NVRTC and uses cuBLAS for matmul", "[cuda]") {
  size_t examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::source("examples"))) {
    if (entry.path().extension() != ".prism") continue;
    std::string name = entry.path().stem().string();
    INFO("example " << name);
    REQUIRE(kSmall.count(name));
    check_eager(test::lowered_example(name), kSmall.at(name));
    ++examples;
  }
  CHECK(examples == kSmall.size());
  for (const test::ExampleLayer& layer : test::example_layers()) {
    INFO("layer " << layer.name);
    check_eager(test::lowered_text(test::layer_text(layer.name), layer.name), layer.small);
  }
}

TEST_CASE("cuda eager: a malformed plan is refused in words", "[cuda]") {
  CHECK_THROWS_WITH(parse_plan("tensor input x 4 f17\nptx\n"), Catch::Contains("malformed CUDA plan line"));
  CHECK_THROWS_WITH(parse_plan("tensor input x 4 f32\n"), Catch::Contains("no 'ptx' line"));
}

namespace {

const char* ctype(DType t) { return t == DType::F16 ? "__half" : t == DType::BF16 ? "__nv_bfloat16" : "float"; }

// The eager plan run on the host: kernels through prism_launch (a thread per CUDA thread), the
// cuBLAS steps as plain loops over what CudaGemm says. Returns the outputs as f32.
std::vector<Tensor> emulate(const Program& p, const DimBindings& dims, const std::vector<Tensor>& inputs) {
  CudaEager eager = generate_cuda_eager(p, dims);
  std::vector<CudaTensor> tensors;
  for (const auto* list : {&eager.plan.inputs, &eager.plan.outputs, &eager.plan.scratch}) tensors.insert(tensors.end(), list->begin(), list->end());
  auto slot = [&](const std::string& name) {
    for (size_t i = 0; i < tensors.size(); ++i)
      if (tensors[i].name == name) return i;
    FAIL("no tensor " << name);
    return size_t(0);
  };
  auto arg = [&](const std::string& name, bool constant) {
    const CudaTensor& t = tensors[slot(name)];
    return std::string("static_cast<") + (constant ? "const " : "") + ctype(t.dtype) + "*>(T[" + std::to_string(slot(name)) + "])";
  };
  std::string host = eager.source + R"(
template <class TA, class TC>
void prism_gemm(const TA* a, const TA* b, TC* c, i64 m, i64 n, i64 k, i64 batch, i64 sa, i64 sb, i64 sc, i64 oa, i64 ob, i64 oc, i64 ta,
                i64 tb) {
  for (i64 i = 0; i < batch; ++i)
    for (i64 r = 0; r < m; ++r)
      for (i64 col = 0; col < n; ++col) {
        float acc = 0;
        for (i64 j = 0; j < k; ++j)
          acc += ld(a, oa + i * sa + (ta ? j * m + r : r * k + j)) * ld(b, ob + i * sb + (tb ? col * k + j : j * n + col));
        st(c, oc + i * sc + r * n + col, acc);
      }
}
extern "C" void prism_store(int dtype, const float* x, void* out, long n) {
  for (long i = 0; i < n; ++i)
    if (dtype == 0) st(static_cast<float*>(out), i, x[i]);
    else if (dtype == 1) st(static_cast<__half*>(out), i, x[i]);
    else st(static_cast<__nv_bfloat16*>(out), i, x[i]);
}
extern "C" void prism_load(int dtype, const void* x, float* out, long n) {
  for (long i = 0; i < n; ++i)
    out[i] = dtype == 0 ? ld(static_cast<const float*>(x), i) : dtype == 1 ? ld(static_cast<const __half*>(x), i)
                                                                           : ld(static_cast<const __nv_bfloat16*>(x), i);
}
extern "C" void prism_emulate(void* const* T) {
)";
  for (const CudaStep& step : eager.plan.steps) {
    if (step.is_gemm) {
      const CudaGemm& g = step.gemm;
      host += "  prism_gemm(" + arg(g.a, true) + ", " + arg(g.b, true) + ", " + arg(g.c, false);
      for (int64_t v : {g.m, g.n, g.k, g.batch, g.stride_a, g.stride_b, g.stride_c, g.offset_a, g.offset_b, g.offset_c, int64_t(g.trans_a),
                        int64_t(g.trans_b)})
        host += ", " + std::to_string(v) + "LL";
      host += ");\n";
      continue;
    }
    host += "  { void* p[] = {";
    for (const std::string& name : step.kernel.params) host += "T[" + std::to_string(slot(name)) + "], ";
    host += "nullptr};\n    prism_launch(" + step.kernel.name + ", p, " + std::to_string(step.kernel.grid_blocks) + ", " +
            std::to_string(step.kernel.threads) + "); }\n";
  }
  host += "}\n";
  static test::TempDir cache;
  const std::string shim = std::string(PRISM_SOURCE_DIR) + "/tests/engine/backend/cuda_emulation";
  backend::cpu::CompileOptions co;
  co.cache_dir = cache.path();
  co.flags = {"-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-include", shim + "/prism_cuda_host.h", "-I", shim};
  backend::cpu::LoadedLibrary lib(backend::cpu::compile_library(host, co).path);
  auto run = lib.function<void (*)(void* const*)>("prism_emulate");
  auto store = lib.function<void (*)(int, const float*, void*, long)>("prism_store");
  auto load = lib.function<void (*)(int, const void*, float*, long)>("prism_load");
  std::vector<std::vector<char>> buffers;
  std::vector<void*> ptrs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const CudaTensor& t = tensors[i];
    buffers.emplace_back(size_t(t.elements) * (t.dtype == DType::F32 ? 4 : 2));
    ptrs.push_back(buffers.back().data());
    if (i < inputs.size()) {
      REQUIRE(int64_t(inputs[i].data.size()) == t.elements);
      store(int(t.dtype), inputs[i].data.data(), ptrs.back(), long(t.elements));
    }
  }
  run(ptrs.data());
  std::vector<Tensor> outputs;
  for (size_t j = 0; j < eager.plan.outputs.size(); ++j) {
    const CudaTensor& t = eager.plan.outputs[j];
    Tensor out = Tensor::zeros(DType::F32, concrete_shape(p.value(p.outputs[j]).type.shape, dims));
    load(int(t.dtype), ptrs[inputs.size() + j], out.data.data(), long(out.data.size()));
    outputs.push_back(std::move(out));
  }
  return outputs;
}

}  // namespace

namespace {

// The program's baseline run on the host against the interpreter, each output at its dtype's tolerance.
void check_against_interpreter(const Program& p, const DimBindings& dims, double tol) {
  std::map<std::string, Tensor> named;
  std::vector<Tensor> inputs = random_inputs(p, dims, 11, &named);
  std::vector<Tensor> want = interpret(p, dims, named);
  std::vector<Tensor> got = emulate(p, dims, inputs);
  for (size_t o = 0; o < want.size(); ++o) {
    double scale = 0;
    for (float x : want[o].data) scale = std::max(scale, double(std::abs(x)));
    tune::Comparison c = tune::compare_outputs({got[o]}, {want[o]}, tol, tol * scale);
    INFO("output " << o << ": " << c.failure.value_or("") << ", max error " << c.max_error);
    CHECK_FALSE(c.failure);
  }
}

}  // namespace

TEST_CASE("cuda eager: every elementwise op of the table, run on the host, computes the interpreter's formula", "[cuda][ops]") {
  check_against_interpreter(lower_composites(test::only_program(test::every_elementwise_op_program())), {{"n", 3}, {"d", 20}}, 1e-6);
  check_against_interpreter(lower_composites(test::only_program(test::every_elementwise_op_program("f16"))), {{"n", 3}, {"d", 20}}, 1e-2);
}

TEST_CASE("cuda eager: every example's baseline, run on the host, matches the reference interpreter", "[cuda]") {
  for (const auto& [name, dims] : kSmall) {
    INFO("example " << name);
    check_against_interpreter(test::lowered_example(name), dims, 1e-2);
  }
  // The layers: nn.Linear weights and K transposed are read by cuBLAS transposed, not copied.
  for (const test::ExampleLayer& layer : test::example_layers()) {
    INFO("layer " << layer.name);
    check_against_interpreter(test::lowered_text(test::layer_text(layer.name), layer.name), layer.small, 1e-3);
  }
}

TEST_CASE("eager: a transpose only matmuls read is a transposed GEMM operand, not a copy", "[cuda][eager]") {
  const Program p = test::lowered_text(test::layer_text("sdpa"), "sdpa");
  const eager::Plan plan = eager::plan(p, {{"B", 2}, {"q", 4}, {"s", 8}, {"e", 4}});
  int gemms = 0, transposed = 0;
  for (const eager::Step& s : plan.steps) {
    CHECK(s.what != "transpose");
    if (s.kind == eager::Step::Kind::Matmul) ++gemms, transposed += s.trans_b;
  }
  CHECK(gemms == 2);
  CHECK(transposed == 1);
  // A transpose something else reads, or one the program returns, is still computed.
  const Program q = test::lowered_text("program t(W: f32[m, d]) {\n  return transpose(W) * 2\n}\n", "t");
  bool copied = false;
  for (const eager::Step& s : eager::plan(q, {{"m", 3}, {"d", 4}}).steps) copied |= s.what == "transpose";
  CHECK(copied);
}

// README, "The language": a 16-bit composite's statistics in f32 (a cast kernel each way).
TEST_CASE("cuda eager: f16 norms on wide activations, run on the host, keep their statistics in f32", "[cuda][casts]") {
  for (const test::WideLayer& layer : test::wide_layers()) {
    INFO("layer " << layer.name);
    const Program p = test::lowered_text(layer.text, layer.name);
    const auto named = test::wide_inputs(p);
    std::vector<Tensor> inputs;
    for (int id : p.inputs) inputs.push_back(named.at(p.value(id).name));
    const Tensor want = interpret(p, test::wide_dims(), named).at(0);
    CHECK(test::relative_error(emulate(p, test::wide_dims(), inputs).at(0), want) < 4e-3);
  }
}

