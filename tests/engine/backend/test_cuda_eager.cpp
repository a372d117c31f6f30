// The eager baseline on the GPU without a GPU: for every example program at a small binding, the
// generated CUDA source compiles with NVRTC, its plan names only tensors it declares, and the
// plan survives its text form. Warns and returns where NVRTC is absent.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "../search/search_helpers.h"
#include "engine/backend/cuda/eager.h"
#include "engine/backend/cuda/nvrtc.h"
#include "engine/error.h"
#include "support/subprocess.h"

using namespace prism;
using namespace prism::backend::cuda;

namespace {

const std::map<std::string, DimBindings> kSmall = {
    {"rms_linear", {{"n", 4}, {"d", 64}}},
    {"rmsnorm_mlp", {{"n", 4}, {"d", 64}}},
    {"gated_mlp", {{"n", 4}, {"d", 64}}},
    {"lora", {{"n", 4}, {"d", 64}, {"o", 128}, {"r", 8}}},
    {"attention", {{"B", 2}, {"q", 2}, {"s", 64}, {"e", 16}}},
    {"qk_norm_attention", {{"B", 2}, {"q", 2}, {"s", 64}, {"e", 16}}},
    {"gqa", {{"h", 2}, {"g", 2}, {"s", 64}, {"e", 16}}},
};

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

TEST_CASE("cuda eager: every example's baseline compiles with NVRTC and uses cuBLAS for matmul", "[cuda]") {
  size_t examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::source("examples"))) {
    std::string name = entry.path().stem().string();
    INFO("example " << name);
    REQUIRE(kSmall.count(name));
    Program p = test::lowered_example(name);
    CudaEager eager = generate_cuda_eager(p, kSmall.at(name));
    ++examples;
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
      continue;
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
  CHECK(examples == kSmall.size());
}

TEST_CASE("cuda eager: a malformed plan is refused in words", "[cuda]") {
  CHECK_THROWS_WITH(parse_plan("tensor input x 4 f17\nptx\n"), Catch::Contains("malformed CUDA plan line"));
  CHECK_THROWS_WITH(parse_plan("tensor input x 4 f32\n"), Catch::Contains("no 'ptx' line"));
}
