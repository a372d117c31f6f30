// Generated CPU kernels against roofline and OpenBLAS: for the hand-written fused families at
// n = 8, 16 and d = 4096 (or argv), every grid/loop size pair in a window, compiled, run with 2
// threads (median of 20 after warm-up), reported as ms, GFLOP/s, GB/s of compulsory traffic
// (inputs + outputs, f32), next to cblas_sgemm of the same matmul(s).
//
//   prism_bench_codegen [d] [family]     family: rms_linear | gated_mlp | rmsnorm_mlp (default all)
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../tests/engine/sgraph/families.h"
#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/codegen.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/ir/shape.h"
#include "engine/interp/tensor.h"
#include "engine/sgraph/parse.h"

extern "C" void openblas_set_num_threads(int);

using namespace prism;
using namespace prism::backend::cpu;

namespace {

// matmul(rms_norm(X), Wu) * matmul(rms_norm(X), Wg): both matmuls and the rms over one loop.
const char* kRmsnormMlp = R"(input X: f32[n, d]
input Wu: f32[d, d]
input Wg: f32[d, d]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: -, loop: 1}
  wu = load Wu map {grid: 1->g1, loop: 0}
  wg = load Wg map {grid: 1->g1, loop: 0}
  a = matmul(x, wu)
  b = matmul(x, wg)
  ua = sum_accumulate(a)
  gb = sum_accumulate(b)
  r = rms_accumulate(x, axis=1)
  u = div(ua, r)
  g = div(gb, r)
  y = mul(u, g)
  save O: f32 = y map {grid: 1->g1, loop: -}
output O
)";

std::string as_f32(std::string s) {
  for (size_t at; (at = s.find("f16")) != std::string::npos;) s.replace(at, 3, "f32");
  return s;
}

// The median of 20 runs after warm-up; `fastest` gets the minimum (on a shared machine the
// median carries other processes' time slices, the minimum less so).
template <class F>
double median_ms(F&& run, double* fastest = nullptr, int reps = 20) {
  for (int i = 0; i < 3; ++i) run();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = std::chrono::steady_clock::now();
    run();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  if (fastest) *fastest = t.front();
  return t[t.size() / 2];
}

struct Family {
  const char* name;
  std::string text;
  int matmuls;
};

}  // namespace

int main(int argc, char** argv) {
  int64_t d = argc > 1 ? std::atoll(argv[1]) : 4096;
  std::string only = argc > 2 ? argv[2] : "";
  const int threads = 2;
  openblas_set_num_threads(threads);
  std::vector<Family> families = {{"rms_linear", as_f32(test::families::kRmsLinear), 1},
                                  {"gated_mlp", as_f32(test::families::kGatedMlp), 2},
                                  {"rmsnorm_mlp", kRmsnormMlp, 2}};
  CodegenOptions options;
  options.simd_bytes = __builtin_cpu_supports("avx512f") ? 64 : 32;
  CompileOptions compile;
  compile.libs = {"-lopenblas"};
  std::printf("%-12s %3s %5s %5s %5s %9s %9s %9s %8s %12s\n", "family", "n", "d", "g1", "F1", "ms", "min ms", "GFLOP/s", "GB/s", "sgemm ms");
  for (const Family& fam : families) {
    if (!only.empty() && only != fam.name) continue;
    for (int64_t n : {8, 16}) {
      DimBindings dims{{"n", n}, {"d", d}};
      sgraph::SGraph g = sgraph::parse(fam.text);
      std::map<std::string, Tensor> inputs;
      std::vector<const float*> ins;
      for (const auto& in : g.inputs) {
        inputs[in.name] = random_tensor(DType::F32, concrete_shape(in.type.shape, dims), 1, in.name);
        ins.push_back(inputs[in.name].data.data());
      }
      std::vector<float> out(size_t(n * d)), tmp(size_t(n * d));
      float* outs[] = {out.data()};
      double flops = 2.0 * double(fam.matmuls) * double(n) * double(d) * double(d);
      double bytes = 4.0 * (double(n * d) * 2 + double(fam.matmuls) * double(d * d));
      // OpenBLAS on the same matmul(s), no fusion.
      const float* x = ins[0];
      double blas_fastest = 0;
      double blas = median_ms([&] {
        for (int m = 0; m < fam.matmuls; ++m)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(d), int(d), 1.0f, x, int(d), ins[size_t(1 + m)], int(d), 0.0f,
                      tmp.data(), int(d));
      }, &blas_fastest);
      std::vector<sgraph::Instance> instances;
      std::vector<std::string> sources;
      for (const DimBindings& s : sgraph::enumerate(g, dims, sgraph::TileBudget{1 << 20})) {
        int64_t g1 = s.at("g1"), f1 = s.at("F1");
        if (g1 < 2 || g1 > 64 || f1 < 4 || f1 > 128) continue;
        instances.push_back(sgraph::instantiate(g, dims, s, sgraph::TileBudget{1 << 20}));
        sources.push_back(generate_cpu_source(instances.back(), options));
      }
      std::vector<std::string> errors;
      auto libs = compile_libraries(sources, compile, 2, &errors);
      double best = 1e30;
      std::string best_sizes;
      for (size_t i = 0; i < libs.size(); ++i) {
        if (!errors[i].empty()) {
          std::fprintf(stderr, "compile failed: %s\n", errors[i].c_str());
          continue;
        }
        LoadedLibrary lib(libs[i].path);
        auto entry = lib.function<EntryFn>(kEntrySymbol);
        const std::vector<const void*> args(ins.begin(), ins.end());
        void* results[] = {outs[0]};
        double fastest = 0, ms = median_ms([&] { entry(args.data(), results, threads); }, &fastest);
        int64_t g1 = instances[i].bindings.at("g1"), f1 = instances[i].bindings.at("F1");
        std::printf("%-12s %3ld %5ld %5ld %5ld %9.3f %9.3f %9.1f %8.1f %12.3f\n", fam.name, long(n), long(d), long(g1), long(f1), ms, fastest,
                    flops / ms / 1e6, bytes / ms / 1e6, blas);
        if (ms < best) {
          best = ms;
          best_sizes = "g1=" + std::to_string(g1) + " F1=" + std::to_string(f1);
        }
      }
      std::printf("best %-12s n=%ld d=%ld %s: %.3f ms, %.1f GFLOP/s, %.1f GB/s; cblas_sgemm %.3f ms (min %.3f)\n\n", fam.name, long(n),
                  long(d), best_sizes.c_str(), best, flops / best / 1e6, bytes / best / 1e6, blas, blas_fastest);
      std::fflush(stdout);
    }
  }
  return 0;
}
