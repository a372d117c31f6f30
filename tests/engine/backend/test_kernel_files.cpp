// The CPU backend's hand-written kernel files (engine/backend/cpu/kernels/, docs/architecture.md
// "Hand-written kernel code") compiled on their own for every instruction set they target, whatever
// this machine has: the prelude every generated source starts with, and its matmul templates
// instantiated for each pair of dtypes they take. A kernel path this machine never runs (AMX,
// AVX-512 on an AVX2 host) is still compiled here.
#include <catch2/catch.hpp>

#include <fstream>

#include "engine/backend/cpu/emit_ops.h"
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
