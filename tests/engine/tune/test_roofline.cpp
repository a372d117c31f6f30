// The roofline of lowered programs, checked against counts by hand.
#include <catch2/catch.hpp>

#include "engine/compile_helpers.h"
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
