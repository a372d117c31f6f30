// The backends' hand-written kernel files (engine/backend/*/kernels/, docs/architecture.md
// "Hand-written kernel code") compiled on their own for every instruction set they target, whatever
// this machine has: the prelude every generated source starts with, and its templates
// instantiated for each type they take. A kernel path this machine never runs (AMX, AVX-512 on an
// AVX2 host, a GPU's tensor cores) is still compiled here.
#include <catch2/catch.hpp>

#include <fstream>

#include "engine/backend/cpu/emit_ops.h"
#include "engine/backend/cuda/emit_ops.h"
#include "engine/backend/cuda/kernel_sources.h"
#include "engine/backend/cuda/nvrtc.h"
#include "support/subprocess.h"

using namespace prism;

namespace {

// Calls that instantiate the templates: the micro-kernel at f32 and both 16-bit dtypes (and its
// NT form), the AMX kernels on a cached and a streamed B, split and stacked.
const char* kInstantiations = R"(
namespace {
[[maybe_unused]] void prism_kernel_files_instantiated(const float* a, const prism_f16* ah, const prism_bf16* ab, const float* b,
                                                      const prism_f16* bh, const prism_bf16* bb, float* c) {
  prism_mm<8, 64, 64, 64, 64, 64, false, 4, 2, 64>(a, b, c);
  prism_mm<8, 64, 64, 64, 64, 64, true, 4, 2, 64>(a, bh, c);
  prism_mm<8, 64, 64, 64, 64, 64, false, 4, 2, 64>(ab, bb, c);
  prism_mm_nt<8, 64, 64, 64, 64, 64, false, 4, 3>(a, bh, c);
  prism_mm_amx<4, 64, 64, 64, 64, 64, false>(ab, bb, c);
  prism_mm_amx<32, 64, 64, 64, 64, 64, false>(ab, bb, c);
  prism_mm_amx<32, 1024, 1024, 1024, 1024, 1024, true>(ab, bb, c);
  prism_mm_amx_nt<32, 64, 64, 64, 64, 64, false>(ab, bb, c);
  prism_mm_amx_nt<32, 64, 64, 64, 64, 64, false>(ah, bh, c);
#if defined(PRISM_AMX) && defined(__AVX512F__)
  prism_mm_amx_split<32, 64, 64, 64, 64, 64, false>(ah, bh, c);
  prism_mm_amx_split<32, 64, 64, 64, 64, 64, false>(a, bh, c);
  prism_mm_amx_split<32, 1024, 1024, 1024, 1024, 1024, true>(a, bb, c);
#endif
}
}  // namespace
)";

// A kernel that calls every device function of the CUDA prelude, both 16-bit types of its
// templates included, and one of the eager baseline's.
const char* kCudaInstantiations = R"(
extern "C" __global__ void prism_kernel_files_instantiated(const __half* h, const __nv_bfloat16* b, float* out) {
  __shared__ __align__(16) float staged[4 * 32];
  prism_copy16_async(staged + 4 * threadIdx.x, out + 4 * threadIdx.x);
  prism_copy_commit();
  prism_copy_wait_prior<1>();
  prism_copy_wait_prior<2>();
  unsigned r[4];
  prism_ldmatrix<4, true>(r, staged + 8 * (threadIdx.x & 7));
  prism_ldmatrix<2, false>(r, staged + 8 * (threadIdx.x & 7));
  prism_copy_wait();
  prism_copy16(out + 4 * threadIdx.x, staged + 4 * threadIdx.x);
  float d[4] = {0, 0, 0, 0};
  const unsigned a = prism_pack16<false>(prism_f32(h[threadIdx.x]), 1.0f), c = prism_pack16<true>(prism_f32(b[threadIdx.x]), 2.0f);
  prism_mma16816<false>(d, a, a, a, a, a, a);
  prism_mma16816<true>(d, c, c, c, c, c, c);
  const float m = prism_max_into(prism_neg_inf(), d[0] + prism_unpack16<true>(c, 1) + prism_unpack16<false>(a, 0));
  prism_put(out + threadIdx.x, prism_rescale(m, d[1]) + prism_finite_max(m) + prism_f32(out[0]));
  prism_put(const_cast<__half*>(h), d[2]);
  prism_put(const_cast<__nv_bfloat16*>(b), d[3]);
}
)";

const char* kCudaEagerInstantiations = R"(
extern "C" __global__ void prism_eager_file_instantiated(const __half* h, const __nv_bfloat16* b, float* out) {
  const i64 i = threadIdx.x;
  st(out, i, ld(h, i) + ld(b, i) + ld(out, i));
  st(const_cast<__half*>(h), i, 1.0f);
  st(const_cast<__nv_bfloat16*>(b), i, 2.0f);
}
)";

struct Isa {
  const char* name;
  int simd_bytes;
  bool amx;
  const char* march;
};

}  // namespace

TEST_CASE("kernel files: the CPU prelude and its matmuls compile for AVX2, AVX-512 and AVX-512 with AMX", "[codegen][kernels]") {
  test::TempDir dir;
  for (const Isa& isa : {Isa{"AVX2", 32, false, "-march=haswell"}, Isa{"AVX-512", 64, false, "-march=skylake-avx512"},
                         Isa{"AVX-512 with AMX", 64, true, "-march=sapphirerapids"}}) {
    INFO(isa.name);
    const std::string path = dir.path() + "/kernels.cpp";
    std::ofstream(path) << backend::cpu::detail::prelude(isa.simd_bytes, isa.amx) << kInstantiations;
    const char* cxx = std::getenv("CXX");
    const test::ProcessResult built =
        test::run_process({cxx && *cxx ? cxx : "c++", "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", "-fopenmp", isa.march, path});
    INFO(built.err);
    CHECK(built.exit_code == 0);
  }
}

TEST_CASE("kernel files: the CUDA prelude and the eager prologue compile for sm_75, sm_80 and sm_90", "[cuda][kernels]") {
  const backend::cuda::NvrtcStatus nvrtc = backend::cuda::nvrtc_status();
  if (!nvrtc.available) {
    WARN("skipped: " << nvrtc.detail);
    return;
  }
  test::TempDir cache;
  for (const char* arch : {"compute_75", "compute_80", "compute_90"}) {
    INFO(arch);
    const std::string ptx = backend::cuda::compile_to_ptx(backend::cuda::detail::prelude() + kCudaInstantiations, arch, cache.path()).ptx;
    // From sm_80 on the tensor cores' mma and the asynchronous copies; before, their emulation.
    const bool ampere = std::string(arch) != "compute_75";
    CHECK((ptx.find("mma.sync.aligned.m16n8k16") != std::string::npos) == ampere);
    CHECK((ptx.find("cp.async") != std::string::npos) == ampere);
    CHECK((ptx.find("shfl.sync") != std::string::npos) == !ampere);
    CHECK_NOTHROW(backend::cuda::compile_to_ptx(std::string(prism::embedded::eager_prologue_cuh) + kCudaEagerInstantiations, arch, cache.path()));
  }
}
