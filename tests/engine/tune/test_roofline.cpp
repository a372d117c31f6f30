// The roofline of lowered programs, checked against counts by hand.
#include <catch2/catch.hpp>

#include "engine/compile_helpers.h"
#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cuda/gpu_features.h"
#include "engine/ir/lower_composites.h"
#include "engine/backend/storage.h"
#include "engine/tune/roofline.h"

using namespace prism;
using namespace prism::tune;
using backend::TargetDescription;

namespace {

TargetDescription machine(double gbs, double gflops) {
  TargetDescription t;
  t.bandwidth_gbs = gbs;
  t.peak_gflops = gflops;
  return t;
}

}  // namespace

TEST_CASE("roofline of a matmul: compulsory bytes and 2mnk flops", "[tune][roofline]") {
  Program p = lower_composites(test::only_program("program p(A: f16[m, k], B: f16[k, n]) {\n  return matmul(A, B)\n}\n"));
  DimBindings b{{"m", 64}, {"k", 128}, {"n", 32}};
  const double bytes = (64 * 128 + 128 * 32 + 64 * 32) * 4.0, flops = 2.0 * 64 * 128 * 32;

  Roofline r = program_roofline(backend::with_storage(p, DType::F32), b, machine(10, 100));
  CHECK(r.compulsory_bytes == bytes);
  CHECK(r.flops == flops);
  CHECK(r.memory_s == Approx(bytes / 10e9));
  CHECK(r.compute_s == Approx(flops / 100e9));
  CHECK(r.seconds == Approx(bytes / 10e9));  // 6.3 us of memory against 5.2 us of compute
  CHECK(r.bound == "memory");

  Roofline half = program_roofline(p, b, machine(10, 100));  // as declared: 2 bytes an element
  CHECK(half.compulsory_bytes == bytes / 2);
  CHECK(half.bound == "compute");
  CHECK(half.seconds == Approx(flops / 100e9));
}

TEST_CASE("roofline counts each tensor at its own dtype", "[tune][roofline]") {
  // A bf16 nn.Linear weight with an f32 activation and gain: 2 bytes a weight, 4 the rest.
  Program p = lower_composites(test::only_program(
      "program p(X: f32[n, d], g: f32[d], W: bf16[m, d]) {\n  return matmul(X * g, transpose(W))\n}\n"));
  DimBindings b{{"n", 8}, {"d", 64}, {"m", 32}};
  CHECK(program_roofline(p, b, machine(10, 100)).compulsory_bytes == 4.0 * (8 * 64 + 64) + 2.0 * 32 * 64 + 4.0 * 8 * 32);
}

TEST_CASE("roofline of a batched program counts every op once per element", "[tune][roofline]") {
  Program p = lower_composites(test::only_program(
      "program p(Q: f32[B, q, e], Kt: f32[B, e, s], V: f32[B, s, e]) {\n  S = exp(matmul(Q, Kt))\n  return matmul(S / sum(S, axis=-1), V)\n}\n"));
  const double B = 2, q = 3, e = 4, s = 5;
  DimBindings b{{"B", 2}, {"q", 3}, {"e", 4}, {"s", 5}};
  Roofline r = program_roofline(p, b, machine(1, 1));
  CHECK(r.compulsory_bytes == 4 * (B * q * e + B * e * s + B * s * e + B * q * e));
  // Q@Kt, exp, the sum (reads q*s per batch), the division, then @V.
  CHECK(r.flops == 2 * B * q * s * e + B * q * s + B * q * s + B * q * s + 2 * B * q * e * s);
}

TEST_CASE("the roofline's peak is that of the instructions a stored program's matmuls run on", "[tune][roofline]") {
  // A CPU without a 16-bit matmul instruction (Zen 3): 16-bit matmuls widen B on the FMAs.
  TargetDescription avx2 = machine(25, 188);
  backend::cpu::cpu_features(avx2) = {.simd_bytes = 32, .widen_f16_gflops = 120, .widen_bf16_gflops = 150};
  CHECK(roofline_peak_gflops(avx2, DType::F32) == 188);
  CHECK(roofline_peak_gflops(avx2, DType::F16) == 120);
  CHECK(roofline_peak_gflops(avx2, DType::BF16) == 150);
  backend::cpu::cpu_features(avx2) = {.simd_bytes = 32};  // widening not measured: the FMA peak
  CHECK(roofline_peak_gflops(avx2, DType::F16) == 188);

  // Sapphire Rapids: AMX tiles for bf16, half their rate for f16 (two tile products a pair), and
  // vdpbf16ps, at half the FMAs' flops there, unused.
  TargetDescription spr = machine(170, 2200);
  backend::cpu::cpu_features(spr) = {.simd_bytes = 64, .bf16_dot_gflops = 1100, .bf16_amx_gflops = 30000, .widen_f16_gflops = 1500, .widen_bf16_gflops = 1500};
  CHECK(roofline_peak_gflops(spr, DType::BF16) == 30000);
  CHECK(roofline_peak_gflops(spr, DType::F16) == 15000);
  // Zen 4: vdpbf16ps at twice the FMAs' rate, which bf16 matmuls take; f16 widens.
  TargetDescription zen4 = machine(60, 1000);
  backend::cpu::cpu_features(zen4) = {.simd_bytes = 64, .bf16_dot_peak_gflops = 2000, .widen_f16_gflops = 800, .widen_bf16_gflops = 800};
  CHECK(roofline_peak_gflops(zen4, DType::BF16) == 2000);
  CHECK(roofline_peak_gflops(zen4, DType::F16) == 800);

  // A GPU: its tensor cores at either 16-bit dtype.
  TargetDescription gpu = machine(4300, 67000);
  gpu.target = backend::cuda::kTarget;
  backend::cuda::gpu_features(gpu).tensor_peak_gflops = 989000;
  CHECK(roofline_peak_gflops(gpu, DType::F16) == 989000);
  CHECK(roofline_peak_gflops(gpu, DType::BF16) == 989000);
  CHECK(roofline_peak_gflops(gpu, DType::F32) == 67000);
}

TEST_CASE("the roofline's bandwidth is a bound: the caches hold at most their capacity of a set", "[tune][roofline]") {
  // A 2-core Zen 3: 33 MiB of caches, a sweep's curve near memory's rate just past them.
  TargetDescription t = machine(25, 190);
  t.l3_bytes = 32 << 20;
  t.l2_bytes = 512 << 10;
  t.cores = 2;
  t.cache_bandwidth_gbs = 75;
  const double mib = 1 << 20;
  t.read_curve = {{8 * mib, 75}, {25 * mib, 38}, {34 * mib, 28}, {66 * mib, 25}};
  CHECK(bound_bandwidth_gbs(t, 4 * mib) == Approx(t.bandwidth_for(4 * mib)));  // within the caches: the curve
  const double set = 33.5 * mib, kept = 33 / 33.5;
  CHECK(t.bandwidth_for(set) < 30);
  CHECK(bound_bandwidth_gbs(t, set) == Approx(1 / (kept / 75 + (1 - kept) / 25)));
  CHECK(bound_bandwidth_gbs(t, 330 * mib) == Approx(1 / (0.1 / 75 + 0.9 / 25)));
  for (double bytes : {1 * mib, 16 * mib, 30 * mib, 40 * mib, 100 * mib, 1000 * mib}) CHECK(bound_bandwidth_gbs(t, bytes) >= t.bandwidth_for(bytes));
  // Without a measured cache bandwidth (a GPU's data sheet): the curve alone.
  t.cache_bandwidth_gbs = 0;
  CHECK(bound_bandwidth_gbs(t, set) == t.bandwidth_for(set));
}
