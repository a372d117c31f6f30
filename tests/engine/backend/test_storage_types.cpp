// The 16-bit storage types of generated CPU code (storage_types.h): they convert exactly as the
// reference interpreter does, and GCC vectorizes the loops that read and write them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cpu/storage_types.h"
#include "engine/interp/half.h"
#include "support/subprocess.h"

using namespace prism;
using namespace prism::backend::cpu;

namespace {

// Compiles the conversions with `flags` added and checks them. Returns whether f16 converted by
// F16C's instructions (storage_types.h defines PRISM_F16_BY_F16C where it does).
bool check_conversions(const std::vector<std::string>& flags) {
  test::TempDir dir;
  const std::string report = dir / "vectorized.txt";
  const std::string source = std::string(kStorageTypes) + R"(
extern "C" void f16_to_f32(const prism_f16* __restrict in, float* __restrict out, long n) { for (long i = 0; i < n; ++i) out[i] = in[i]; }
extern "C" void f32_to_f16(const float* __restrict in, prism_f16* __restrict out, long n) { for (long i = 0; i < n; ++i) out[i] = in[i]; }
extern "C" void bf16_to_f32(const prism_bf16* __restrict in, float* __restrict out, long n) { for (long i = 0; i < n; ++i) out[i] = in[i]; }
extern "C" void f32_to_bf16(const float* __restrict in, prism_bf16* __restrict out, long n) { for (long i = 0; i < n; ++i) out[i] = in[i]; }
extern "C" void widen_rows(const prism_f16* in, float* out, long n) { prism_widen_f16(in, out, n); }
extern "C" void narrow_rows(const float* in, prism_f16* out, long n) { prism_narrow_f16(in, out, n); }
#ifdef PRISM_F16_BY_F16C
extern "C" int by_f16c() { return 1; }
#else
extern "C" int by_f16c() { return 0; }
#endif
)";
  CompileOptions options;
  options.cache_dir = dir / "cache";  // compiled here, so GCC writes its report
  options.flags.push_back("-fopt-info-vec-optimized=" + report);
  options.flags.insert(options.flags.end(), flags.begin(), flags.end());
  LoadedLibrary lib(compile_library(source, options).path);

  // GCC 12 turned a nested ?: of the f16 conversions into branches and vectorized none of these
  // loops on AVX2: an f16 add of two 16 x 4096 tensors took 0.17 ms, most of a LoRA layer's tail.
  // GCC's report names each vectorized loop by its line ("FILE:LINE:COLUMN: optimized: loop vectorized ...").
  std::vector<std::string> vectorized;
  std::ifstream in(report);
  for (std::string line; std::getline(in, line);)
    if (line.find("loop vectorized") != std::string::npos) vectorized.push_back(line);
  for (const char* function : {"f16_to_f32", "f32_to_f16", "bf16_to_f32", "f32_to_bf16"}) {
    INFO(function);
    const size_t at = source.find(std::string(" ") + function + "(");
    REQUIRE(at != std::string::npos);
    // Built by append: GCC 12 misreports `":" + std::string` under -Wrestrict (PR 105329).
    const std::string tag = std::string(":").append(std::to_string(1 + std::count(source.begin(), source.begin() + long(at), '\n'))).append(":");
    CHECK(std::any_of(vectorized.begin(), vectorized.end(), [&](const std::string& l) { return l.find(tag) != std::string::npos; }));
  }

  // Every f16 value widens to the interpreter's float, bit for bit; a NaN to a NaN (F16C quiets a
  // signalling one, the interpreter keeps its bits: no result depends on which).
  std::vector<uint16_t> h(65536);
  for (size_t i = 0; i < h.size(); ++i) h[i] = uint16_t(i);
  std::vector<float> f(h.size());
  auto bits = [](float x) { uint32_t u; std::memcpy(&u, &x, 4); return u; };
  lib.function<void (*)(const uint16_t*, float*, long)>("f16_to_f32")(h.data(), f.data(), long(h.size()));
  long wrong = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    const float want = f16_bits_to_f32(h[i]);
    wrong += want != want ? f[i] == f[i] : bits(f[i]) != bits(want);
  }
  CHECK(wrong == 0);
  lib.function<void (*)(const uint16_t*, float*, long)>("bf16_to_f32")(h.data(), f.data(), long(h.size()));
  wrong = 0;
  for (size_t i = 0; i < h.size(); ++i) wrong += bits(f[i]) != bits(bf16_bits_to_f32(h[i]));
  CHECK(wrong == 0);

  // Floats spread over every exponent, both signs, infinities and NaNs, and the ties around each
  // f16 value (its bits shifted up, plus half an f16 unit) round as the interpreter rounds them.
  std::vector<float> x;
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 251) {
    float v;
    const uint32_t w = uint32_t(u);
    std::memcpy(&v, &w, 4);
    x.push_back(v);
  }
  for (uint32_t i = 0; i < 65536; ++i) x.push_back(f16_bits_to_f32(uint16_t(i)) * (1.0f + 0x1p-11f));
  std::vector<uint16_t> out(x.size());
  // A NaN stays a NaN (the interpreter keeps its payload's top bits; the kernels write f16's quiet
  // NaN): no result depends on which.
  auto f16_nan = [](uint16_t v) { return (v & 0x7c00u) == 0x7c00u && (v & 0x3ffu) != 0; };
  lib.function<void (*)(const float*, uint16_t*, long)>("f32_to_f16")(x.data(), out.data(), long(x.size()));
  wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) wrong += x[i] != x[i] ? !f16_nan(out[i]) : out[i] != f32_to_f16_bits(x[i]);
  CHECK(wrong == 0);
  lib.function<void (*)(const float*, uint16_t*, long)>("f32_to_bf16")(x.data(), out.data(), long(x.size()));
  wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) wrong += out[i] != f32_to_bf16_bits(x[i]);
  CHECK(wrong == 0);
  // The row helpers the emitters stage f16 through: the same conversions, 8 lanes at a time and
  // then a tail (n is no multiple of 8 here).
  lib.function<void (*)(const uint16_t*, float*, long)>("widen_rows")(h.data(), f.data(), long(h.size()) - 3);
  wrong = 0;
  for (size_t i = 0; i + 3 < h.size(); ++i) {
    const float want = f16_bits_to_f32(h[i]);
    wrong += want != want ? f[i] == f[i] : bits(f[i]) != bits(want);
  }
  CHECK(wrong == 0);
  lib.function<void (*)(const float*, uint16_t*, long)>("narrow_rows")(x.data(), out.data(), long(x.size()) - 5);
  wrong = 0;
  for (size_t i = 0; i + 5 < x.size(); ++i) wrong += x[i] != x[i] ? !f16_nan(out[i]) : out[i] != f32_to_f16_bits(x[i]);
  CHECK(wrong == 0);
  return lib.function<int (*)()>("by_f16c")() != 0;
}

}  // namespace

TEST_CASE("16-bit storage converts as the interpreter does, in loops GCC vectorizes", "[codegen][half][f16][bf16]") {
  // As compiled for this CPU: with F16C's vector instructions where it has F16C and AVX2 (an add
  // of two 16 x 1024 f16 row blocks, 8 vs 24 us on one Zen 3 core).
  __builtin_cpu_init();
  const bool f16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2");
  CHECK(check_conversions({}) == f16c);
  // And without F16C (a CPU that lacks it, or PRISM_CPU_DISABLE=f16c): the integer arithmetic.
  CHECK_FALSE(check_conversions({"-mno-f16c"}));
}
