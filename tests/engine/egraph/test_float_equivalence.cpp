// `equiv` in floating point (docs/design.md, "Numerics"): identities exact over the reals that
// floats refute are proved and then refuted in floating point, naming the set; identities that
// hold in floats too are said to, on more than the seeded inputs; a narrowing cast is part of what
// is proved; a division by a dim that may be zero is neither folded nor proved away.
#include <catch2/catch.hpp>

#include "engine/egraph/equivalence.h"
#include "engine/workspace/workspace.h"

using namespace prism;

namespace {

const char* kPrograms = R"(
program log_exp(X: f32[n]) {
  return log(exp(X))
}
program exp_sum(X: f32[n], Y: f32[n]) {
  return exp(X + Y)
}
program exp_chain(A: f32[n], B: f32[n], C: f32[n]) {
  return exp(A - B) * exp(B - C)
}
program quotient(A: f32[n], B: f32[n], C: f32[n]) {
  return (A + B) / C
}
program product(A: f32[n], B: f32[n], C: f32[n]) {
  return (A * C) / B
}
program variance(X: f32[n, d]) {
  m = mean(X, axis=-1)
  return mean((X - m) * (X - m), axis=-1)
}
program through_f16(X: f32[n]) {
  return f32(f16(X * 100000))
}
program seventh(X: f32[n, d]) {
  return X / (d - 7) * (d - 7)
}
program eighth(X: f32[n, d]) {
  return X / 8
}
)";

EquivResult equiv(Workspace& ws, const std::string& a, const std::string& b) {
  EquivResult r = ws.equivalent(a, b, EquivLimits{});
  INFO(a << "  vs  " << b << ": " << verdict_name(r.verdict) << " " << r.message << " | " << r.floating.set << ": " << r.floating.detail);
  return r;
}

}  // namespace

TEST_CASE("equivalence in floats: what floats refute is proved over the reals and refuted in floating point", "[egraph][equivalence][numerics]") {
  Workspace ws;
  ws.open("file:///floats.prism", kPrograms, 1);
  struct Case {
    std::string a, b, set, rule;
  };
  const std::vector<Case> cases = {
      {"log_exp", "X", "", "log-exp"},
      {"exp_sum", "exp(X) * exp(Y)", "", "exp-add"},
      {"exp_chain", "exp(A - C)", "", "exp-sub-chain"},
      {"quotient", "A / C + B / C", "opposite outliers over tiny values", "div-distribute"},
      {"product", "(A / B) * C", "opposite outliers over tiny values", "mul-div-swap"},
      {"variance", "mean(X * X, axis=-1) - mean(X, axis=-1) * mean(X, axis=-1)", "mean-shifted rows", "sum-centred-square"},
  };
  for (const Case& c : cases) {
    const EquivResult r = equiv(ws, c.a, c.b);
    INFO(c.a << "  vs  " << c.b << ": " << r.floating.set << ": " << r.floating.detail);
    CHECK(r.verdict == EquivResult::Verdict::Proved);
    CHECK(r.floating.ran);
    CHECK(r.floating.refuted);
    CHECK(r.floating.set.find(c.set) != std::string::npos);
    CHECK(r.floating.detail.find(" on the left and ") != std::string::npos);
    if (!c.rule.empty()) CHECK(std::find(r.reals_only_rules.begin(), r.reals_only_rules.end(), c.rule) != r.reals_only_rules.end());
  }
}

TEST_CASE("equivalence in floats: an identity floats keep is equal on large magnitudes too", "[egraph][equivalence][numerics]") {
  Workspace ws;
  ws.open("file:///floats.prism", kPrograms, 1);
  for (const char* b : {"X * 0.125", "(X / 4) / 2"}) {
    const EquivResult r = equiv(ws, "eighth", b);
    CHECK(r.verdict == EquivResult::Verdict::Proved);
    CHECK(r.floating.ran);
    CHECK_FALSE(r.floating.refuted);
    CHECK(r.floating.inputs >= 4);  // seeded, mean-shifted, near exp overflow, outliers
  }
  // Dividing by a power of two is exact in floats; x/8 = x * 0.125 uses no reals-only rule.
  CHECK(equiv(ws, "eighth", "X * 0.125").reals_only_rules.empty());
}

TEST_CASE("equivalence in floats: a narrowing cast is part of what is proved", "[egraph][equivalence][numerics][casts]") {
  Workspace ws;
  ws.open("file:///floats.prism", kPrograms, 1);
  ws.open("file:///casts.prism", "program q(X: f32[n, d]) {\n  return f32(f16(-X)) * 2\n}\n", 1);
  // Rounding X * 100000 to f16 overflows; the proof keeps the cast, the reals check rounds there.
  const EquivResult through = equiv(ws, "through_f16", "X * 100000");
  CHECK(through.verdict == EquivResult::Verdict::Refuted);
  CHECK(through.a_text == "f16((X * 100000))");
  // What holds in IEEE arithmetic: the sign moves through a rounding, rounding twice is once, a
  // cast to f32 (or to the value's own dtype) changes nothing.
  for (const char* same : {"-f32(f16(X)) * 2", "f32(f16(f32(f16(-X)))) * 2", "f32(f16(-X)) * 2.0"}) CHECK(equiv(ws, "q", same).verdict == EquivResult::Verdict::Proved);
  CHECK(equiv(ws, "q", "-f32(f16(X)) * 2").explanation.find("[cast-neg]") != std::string::npos);
  // A side that does not round where the program does is not proved, and the message says why.
  EquivLimits quick;
  quick.time_limit_s = 2;
  const EquivResult unrounded = ws.equivalent("q", "-X * 2", quick);
  CHECK(unrounded.verdict != EquivResult::Verdict::Proved);
  CHECK(unrounded.message.find("the sides round differently inside wider computations ('q' to f16, '-X * 2' nowhere)") != std::string::npos);
  CHECK(equiv(ws, "q", "f32(bf16(-X)) * 2").verdict == EquivResult::Verdict::Refuted);
  // Rounding to the dtype the rest computes in is the implicit rounding of a 16-bit value, which
  // proofs leave to the float checks: f16(-X) * 2 is an f16 program equal to -X * 2.
  CHECK(equiv(ws, "q", "f16(-X) * 2").verdict != EquivResult::Verdict::Proved);
  ws.open("file:///f16.prism", "program h(X: f32[n, d]) {\n  return f16(-X) * 2\n}\n", 1);
  CHECK(equiv(ws, "h", "-X * 2").verdict == EquivResult::Verdict::Proved);
}

TEST_CASE("equivalence in floats: a division by d - 7 is not cancelled", "[egraph][equivalence][numerics]") {
  Workspace ws;
  ws.open("file:///floats.prism", kPrograms, 1);
  const EquivResult r = equiv(ws, "seventh", "X");
  CHECK(r.verdict != EquivResult::Verdict::Proved);
  // Written as one constant, the compiler folds it to 1 but remembers the divisor: the binding
  // d = 7 is refused, not computed as X.
  ws.open("file:///folded.prism", "program folded(X: f32[n, d]) {\n  return X * ((d - 7) / (d - 7))\n}\n", 1);
  CHECK(equiv(ws, "folded", "X").verdict != EquivResult::Verdict::Proved);
  try {
    RunRequest request;
    request.program = "folded";
    request.bindings = {{"n", 2}, {"d", 7}};
    (void)ws.run(request);
    FAIL("expected an error at d = 7");
  } catch (const std::exception& e) {
    CHECK(std::string(e.what()).find("divides by d-7, which is 0 at d=7") != std::string::npos);
  }
}
