// Workspace::equivalent: the identities the optimizer relies on must be proved (with symbolic
// dims, and a printed explanation), and tempting non-identities must be refuted numerically and
// never proved.
#include <catch2/catch.hpp>


#include "engine/egraph/equivalence.h"
#include "engine/ir/lower_composites.h"
#include "engine/lang/compile.h"
#include "engine/workspace/workspace.h"
#include "support/subprocess.h"

using namespace prism;
using prism::test::read_example;

namespace {

const char* kExtra = R"(
program row_sum(X: f32[n, d]) {
  return sum(X, axis=-1)
}
program square_sum(X: f32[n, n]) {
  return sum(X, axis=-1)
}
program square_mm(X: f32[n, n], W: f32[n, n]) {
  return matmul(X, W)
}
program ab(A: f32[n, d], B: f32[n, d]) {
  return exp(A + B)
}
program plus_zero(X: f32[n, d]) {
  return X + 0
}
program eighth(X: f32[n, d]) {
  return X / 8
}
program scaled_twice(X: f32[n, d]) {
  return (X * 2) * 3
}
program tenth(X: f32[n, d]) {
  return X / 10
}
program hundredth(X: f32[n, d]) {
  return X * 0.1 * 0.1
}
program scaled(X: f32[n, d], R: f32[1, d], W: f32[d, d]) {
  return matmul(X / R, W)
}
)";

void open_all(Workspace& ws) {
  for (const char* name : {"rms_linear", "rmsnorm_mlp", "gated_mlp", "attention", "qk_norm_attention", "lora", "gqa"})
    ws.open(std::string("file:///") + name + ".prism", read_example(name), 1);
  ws.open("file:///extra.prism", kExtra, 1);
}

const std::string kSplitGate =
    "silu(reshape(sum(sum(reshape(X, [n, F, d/F, 1]) * reshape(Wg, [1, F, d/F, d]), axis=2), axis=1), [n, d]))"
    " * reshape(sum(sum(reshape(X, [n, F, d/F, 1]) * reshape(Wu, [1, F, d/F, d]), axis=2), axis=1), [n, d])";

}  // namespace

TEST_CASE("equivalence: the must-prove identities are proved with an explanation", "[egraph][equivalence][prove]") {
  Workspace ws;
  open_all(ws);
  // The proofs end on their goal, nodes or iterations; the time limit is only a guard, generous
  // so that a loaded machine (ctest -j3 on 2 cores) does not cut a proof short.
  EquivLimits limits;
  limits.time_limit_s = 60;
  struct Case {
    std::string a, b;
  };
  std::vector<Case> cases = {
      {"rms_linear", "matmul(X, W) / rms(X, axis=-1)"},
      {"gated_mlp", kSplitGate},
      {"row_sum", "reshape(sum(sum(reshape(X, [n, F, d/F]), axis=2), axis=1), [n, 1])"},
      {"attention", "matmul(exp(matmul(Q, Kt)), V) / sum(exp(matmul(Q, Kt)), axis=-1)"},
      {"rmsnorm_mlp", "matmul(X, Wu) / rms(X, axis=-1) * (matmul(X, Wg) / rms(X, axis=-1))"},
      // constants: 0 and 1, a division by a constant as a product, folding
      {"plus_zero", "X"},
      {"plus_zero", "X * 1"},
      {"eighth", "X * 0.125"},
      {"scaled_twice", "X * 6"},
      // decimals are exact rationals: 0.1 is 1/10, and 0.1 * 0.1 folds to 0.01
      {"tenth", "X * 0.1"},
      {"hundredth", "X * 0.01"},
      {"hundredth", "X / 100"},
  };
  for (const auto& c : cases) {
    EquivResult r = ws.equivalent(c.a, c.b, limits);
    INFO(c.a << "  vs  " << c.b << "\n" << verdict_name(r.verdict) << " (" << stop_reason_name(r.stop_reason) << ") " << r.message);
    CHECK(r.verdict == EquivResult::Verdict::Proved);
    CHECK_FALSE(r.explanation.empty());
    CHECK_FALSE(r.a_text.empty());
    WARN("proof of " << c.a << " == " << c.b << ":\n" << r.explanation);
  }
}

// In a workspace of its own: the must-prove cases share one resident e-graph, and more terms in
// it slow every proof there.
TEST_CASE("equivalence: Llama's RMSNorm through rsqrt is proved equal to rms_norm", "[egraph][equivalence][prove]") {
  Workspace ws;
  ws.open("file:///llama_rms.prism",
          "program llama_rms(X: f32[n, d]) {\n  return X * rsqrt(mean(X ** 2, axis=-1, keepdims=true) + 1e-6)\n}\n", 1);
  // x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps), as Llama writes it
  for (const char* other : {"rms_norm(X, eps=1e-6)", "X / sqrt(mean(X * X, axis=-1, keepdims=true) + 1e-6)"}) {
    EquivResult r = ws.equivalent("llama_rms", other, EquivLimits{});
    INFO(other << ": " << r.message);
    CHECK(r.verdict == EquivResult::Verdict::Proved);
  }
}

TEST_CASE("equivalence: tempting non-identities are refuted and never proved", "[egraph][equivalence][never]") {
  Workspace ws;
  open_all(ws);
  struct Case {
    std::string a, b;
  };
  std::vector<Case> cases = {
      {"square_mm", "matmul(W, X)"},
      {"ab", "exp(A) + exp(B)"},
      {"ab", "rms(A + B, axis=-1) - rms(A, axis=-1) - rms(B, axis=-1) + exp(A + B)"},
      {"square_sum", "transpose(sum(X, axis=0))"},
      {"row_sum", "reshape(sum(reshape(X, [n, F, d/F]), axis=1), [n, d/F])"},
      {"scaled", "matmul(X, W) / R"},
      {"rms_linear", "matmul(X, W) * rms(X, axis=-1)"},
      {"rms_linear", "matmul(X, W)"},
      {"gated_mlp", "silu(matmul(X, Wu)) * matmul(X, Wg)"},
      {"attention", "matmul(exp(matmul(Q, Kt)) / sum(exp(matmul(Q, Kt)), axis=-2), V)"},
      {"lora", "matmul(X, W) + matmul(X, matmul(A, B)) * 2"},
      {"eighth", "X * 0.12"},
      {"scaled_twice", "X * 5"},
      {"plus_zero", "X * 0"},
      {"tenth", "X * 0.11"},
      {"hundredth", "X * 0.1"},
  };
  for (const auto& c : cases) {
    EquivResult r = ws.equivalent(c.a, c.b, EquivLimits{});
    INFO(c.a << "  vs  " << c.b << ": " << verdict_name(r.verdict) << " " << r.message);
    CHECK(r.verdict == EquivResult::Verdict::Refuted);
    CHECK(r.stop_reason == StopReason::Counterexample);  // never "saturated": nothing ran
    REQUIRE(r.counterexample.has_value());
    CHECK(r.counterexample->max_abs_diff > 0);
  }
  // The e-graph alone, with no numeric check in front, must not prove any of them either.
  for (const auto& c : cases) {
    std::string text = kExtra;
    for (const char* name : {"rms_linear", "gated_mlp", "attention", "lora"}) text += read_example(name);
    CompileResult compiled = compile_text(text, "never.prism");
    const Program* context = nullptr;
    for (const auto& p : compiled.programs)
      if (p.name == c.a) context = &p;
    REQUIRE(context);
    ResidentEGraph g;
    EquivResult r = g.prove(lower_composites(*context), compile_expression(*context, c.b), EquivLimits{20000, 12, 2.0});
    INFO(c.a << "  vs  " << c.b << ": " << r.message);
    CHECK(r.verdict == EquivResult::Verdict::NotProved);
    CHECK(r.stop_reason != StopReason::GoalReached);
  }
}

TEST_CASE("equivalence: dims near 2^62 are checked without overflow", "[egraph][equivalence][hostile]") {
  // D12: the numeric check multiplied the dims of a shape before comparing with its limit, a
  // signed overflow (undefined behaviour, reported by UBSan) for a dim of 2^62.
  Workspace ws;
  ws.open("file:///huge.prism",
          "program huge(X: f32[n, 4611686018427387904]) {\n  return X * 2\n}\n"
          "program huge2(X: f32[4611686018427387904, 4611686018427387904]) {\n  return X + X\n}\n",
          1);
  for (const char* other : {"X + X", "X * 3"}) {
    EquivResult r = ws.equivalent("huge", other, EquivLimits{});
    INFO(other << ": " << verdict_name(r.verdict) << " " << r.message);
    CHECK_FALSE(r.message.empty());
  }
  EquivResult r = ws.equivalent("huge2", "X * 2", EquivLimits{});
  CHECK(r.verdict != EquivResult::Verdict::Refuted);
}
