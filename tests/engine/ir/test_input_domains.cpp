// Input domains (issue 45): declared after an input's type, inferred where a sqrt, rsqrt, log or
// division needs them, and honoured by the one function that draws random inputs.
#include <catch2/catch.hpp>

#include "engine/interp/interpreter.h"
#include "engine/ir/input_domains.h"
#include "engine/ir/lower_composites.h"
#include "engine/ir/print.h"
#include "engine/lang/format.h"
#include "../compile_helpers.h"

using namespace prism;
using prism::test::diag_lines;
using prism::test::only_program;

namespace {

// Inference BatchNorm as PyTorch's BatchNorm1d computes it in eval mode: running mean and
// variance, gain and bias vectors.
const char* kBatchNorm =
    "program batchnorm(X: f32[n, d], mu: f32[d], var: f32[d], g: f32[d], b: f32[d]) {\n"
    "  return (X - mu) / sqrt(var + 1e-5) * g + b\n"
    "}\n";

std::vector<Domain> domains_of(const std::string& text) { return input_domains(lower_composites(only_program(text))); }

}  // namespace

TEST_CASE("domains: `>= 0` and `> 0` after an input's type are parsed, printed and formatted back", "[engine][domains]") {
  const std::string text = "program p(var: f16[d] >= 0, s: f32[n, d] > 0, X: f32[n, d]) {\n  return X / s + sqrt(var)\n}\n";
  const Program p = only_program(text);
  CHECK(p.value(p.inputs[0]).domain == Domain::NonNegative);
  CHECK(p.value(p.inputs[1]).domain == Domain::Positive);
  CHECK(p.value(p.inputs[2]).domain == Domain::Any);
  CHECK(signature(p) == "program p(var: f16[d] >= 0, s: f32[n, d] > 0, X: f32[n, d]) -> f32[n, d]");
  // The printed program reads back to the same domains.
  const Program again = only_program(print_program(p));
  CHECK(again.value(again.inputs[0]).domain == Domain::NonNegative);
  CHECK(again.value(again.inputs[1]).domain == Domain::Positive);
  // The formatter keeps one space around the comparison, whatever was written.
  CHECK(format_source("program p(v: f32[d]>=0, s: f32[d]  >  0) {\n  return v / s\n}\n") ==
        "program p(v: f32[d] >= 0, s: f32[d] > 0) {\n  return v / s\n}\n");
}

TEST_CASE("domains: anything else after an input's type is an error at its line and column", "[engine][domains]") {
  CHECK(diag_lines("program p(X: f32[n] >= 1) {\n  return X\n}\n") ==
        "1:24: an input's domain is '>= 0' or '> 0'; found '1' after '>='\n");
  CHECK(diag_lines("program p(X: f32[n] > -1) {\n  return X\n}\n") == "1:23: an input's domain is '>= 0' or '> 0'; found '-' after '>'\n");
  CHECK(diag_lines("program p(X: f32[n] < 0) {\n  return X\n}\n") == "1:21: an input's domain is '>= 0' or '> 0'; an upper bound ('<') is not one\n");
  CHECK(diag_lines("program p(X: f32[n] positive) {\n  return X\n}\n") ==
        "1:21: expected ',', ')' or a domain ('>= 0', '> 0') after the type but found 'positive'\n");
  CHECK(diag_lines("program p(X: f32[n] >=) {\n  return X\n}\n") == "1:23: an input's domain is '>= 0' or '> 0'; found ')' after '>='\n");
}

TEST_CASE("domains: an input that reaches a sqrt, rsqrt, log or divisor through sign-keeping ops gets one", "[engine][domains]") {
  using D = std::vector<Domain>;
  const Domain any = Domain::Any, nonneg = Domain::NonNegative, pos = Domain::Positive;
  // BatchNorm's variance: sqrt(var + eps) needs var >= -eps; the mean, gain and bias are free.
  CHECK(domains_of(kBatchNorm) == D{any, any, nonneg, any, any});
  CHECK(domains_of("program p(X: f32[n], s: f32[n]) {\n  return X / s\n}\n") == D{any, pos});
  CHECK(domains_of("program p(X: f32[n], s: f32[n]) {\n  return X / (2 * s)\n}\n") == D{any, pos});
  CHECK(domains_of("program p(p: f32[n, d]) {\n  return log(sum(p, axis=-1))\n}\n") == D{pos});
  CHECK(domains_of("program p(a: f32[n], b: f32[n]) {\n  return rsqrt(a * b + 1)\n}\n") == D{nonneg, nonneg});
  CHECK(domains_of("program p(v: f32[n, d]) {\n  return sqrt(matmul(v, transpose(v)))\n}\n") == D{nonneg});
  // Declared domains stay; a need through a sub, a neg or a signed activation constrains nothing.
  CHECK(domains_of("program p(v: f32[n] > 0) {\n  return sqrt(v)\n}\n") == D{pos});
  CHECK(domains_of("program p(v: f32[n]) {\n  return sqrt(v - 1)\n}\n") == D{any});
  CHECK(domains_of("program p(v: f32[n]) {\n  return log(tanh(v))\n}\n") == D{any});
  // What is already positive needs nothing: RMSNorm, LayerNorm, softmax, a scale by a dim.
  CHECK(domains_of("program p(X: f32[n, d]) {\n  return rms_norm(X) + rms_norm(X, eps=1e-6) + softmax(X)\n}\n") == D{any});
  CHECK(domains_of("program p(X: f32[n, d]) {\n  m = mean(X)\n  v = mean((X - m) * (X - m))\n  return (X - m) / sqrt(v + 1e-5) / sqrt(d)\n}\n") ==
        D{any});
}

TEST_CASE("domains: random inputs are drawn inside each input's domain, declared or inferred", "[engine][domains]") {
  const Program p = lower_composites(only_program("program p(X: f32[n, d], s: f16[d] > 0, var: bf16[d]) {\n  return X / s + sqrt(var)\n}\n"));
  std::map<std::string, Tensor> named;
  const std::vector<Tensor> inputs = random_inputs(p, {{"n", 8}, {"d", 256}}, 3, &named);
  REQUIRE(inputs.size() == 3);
  float lowest_x = 1;
  for (float x : named.at("X").data) lowest_x = std::min(lowest_x, x);
  CHECK(lowest_x < -0.9f);  // unconstrained: all of [-1, 1)
  for (float x : named.at("s").data) CHECK((x >= 1.0f / 64 && x <= 1));
  for (float x : named.at("var").data) CHECK((x >= 0 && x <= 1));
  CHECK(inputs[2].data == named.at("var").data);
  // The same function fills in what `run` was not given.
  std::map<std::string, Tensor> given{{"X", Tensor::zeros(DType::F32, {8, 256})}};
  draw_inputs(p, {{"n", 8}, {"d", 256}}, 3, given);
  CHECK(given.at("X").data[0] == 0);
  CHECK(given.at("var").data == named.at("var").data);
}
