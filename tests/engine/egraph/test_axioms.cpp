// Every axiom, checked numerically: seed terms that every rule's left-hand side can match, one
// round of every rule, and for each application both sides (the matched term and the term the
// rule added) converted to IR programs and run by the reference interpreter for several bindings.
// Also: the shape analysis refuses to merge classes of different shapes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/egraph/axioms.h"
#include "engine/egraph/equivalence.h"
#include "engine/egraph/extract.h"
#include "engine/egraph/runner.h"
#include "engine/egraph/tensor_lang.h"
#include "engine/interp/interpreter.h"

using namespace prism;
using namespace prism::eg;

namespace {

// Every op of the table's classes: an op added to ir/ops.h gets its layout rules checked here.
const std::vector<TOp> kUnary = term_ops(OpClass::Unary);
const std::vector<TOp> kBinary = term_ops(OpClass::Binary);
const std::vector<TOp> kReduce = term_ops(OpClass::Reduce);

void seed_terms(TensorGraph& tg) {
  const Dim n = Dim::symbol("n"), d = Dim::symbol("d"), m = Dim::symbol("m"), F = Dim::symbol("F"), g = Dim::symbol("g");
  Id X = tg.input("X", {n, d}), Y = tg.input("Y", {n, d}), Z = tg.input("Z", {n, d}), W = tg.input("W", {d, m});
  Id r = tg.input("r", {n, Dim(1)}), q = tg.input("q", {n, Dim(1)});
  Id two = tg.constant(Constant{Dim(2), 0});
  DimId gg = tg.dim_id(g);
  // A cast term rounds to a 16-bit dtype (from_program.h): the seeds' casts round to f16.
  auto op = [&](TOp o, std::vector<Id> k, int axis = 0, uint32_t payload = 0) {
    return tg.op(o, k, axis, o == TOp::Cast ? uint32_t(DType::F16) : payload);
  };
  auto U = [&](Id x, int axis) { return op(TOp::Unsqueeze, {x}, axis); };
  auto S = [&](Id x, int axis) { return op(TOp::Squeeze, {x}, axis); };
  auto part = [&](Id x) { return op(TOp::Partition, {x}, 1, gg); };
  auto rep = [&](Id x) { return op(TOp::Replicate, {x}, 0, gg); };

  // arithmetic
  op(TOp::Matmul, {op(TOp::Div, {X, r}), W});
  op(TOp::Mul, {op(TOp::Exp, {op(TOp::Add, {X, Y})}), Z});
  op(TOp::Log, {op(TOp::Exp, {X})});
  op(TOp::Add, {op(TOp::Mul, {X, Y}), op(TOp::Mul, {X, Z})});
  op(TOp::Add, {op(TOp::Div, {X, r}), op(TOp::Div, {Y, r})});
  op(TOp::Div, {op(TOp::Div, {X, r}), q});
  op(TOp::Div, {op(TOp::Mul, {X, Y}), r});
  op(TOp::Mul, {op(TOp::Neg, {X}), Y});
  op(TOp::Sub, {X, op(TOp::Mul, {Y, two})});
  op(TOp::Mul, {X, op(TOp::Add, {Y, Z})});
  op(TOp::Add, {X, op(TOp::Add, {Y, Z})});
  op(TOp::Add, {op(TOp::Add, {X, Y}), Z});
  op(TOp::Div, {op(TOp::Add, {X, Y}), r});
  op(TOp::Mul, {op(TOp::Div, {X, r}), Y});
  op(TOp::Mul, {op(TOp::Exp, {X}), op(TOp::Exp, {Y})});
  op(TOp::Add, {X, op(TOp::Neg, {Y})});
  op(TOp::Mul, {Y, Y});
  op(TOp::Mul, {X, op(TOp::Rsqrt, {r})});
  // casts: rounding twice, the sign through a rounding
  op(TOp::Cast, {op(TOp::Cast, {X})});
  op(TOp::Cast, {op(TOp::Neg, {X})});
  op(TOp::Neg, {op(TOp::Cast, {Y})});
  // constants: folding, 0 and 1, division by a constant
  Id three = tg.constant(Constant{Dim(3), 0}), zero = tg.constant(Constant{Dim(0), 0}), unit = tg.constant(Constant{Dim(1), 0});
  Id dd = tg.constant(Constant{d, 0});
  for (TOp b : {TOp::Add, TOp::Sub, TOp::Mul, TOp::Div}) op(b, {X, op(b, {two, three})});
  op(TOp::Mul, {X, op(TOp::Div, {dd, two})});
  op(TOp::Add, {X, zero});
  op(TOp::Sub, {Y, zero});
  op(TOp::Mul, {X, unit});
  op(TOp::Div, {Y, unit});
  op(TOp::Div, {Z, three});
  op(TOp::Mul, {X, tg.constant(Constant{std::nullopt, 0.125})});
  // reductions, splits
  op(TOp::Sum, {op(TOp::Add, {X, Y})}, 1);
  op(TOp::Sum, {op(TOp::Mul, {r, X})}, 1);
  op(TOp::Sum, {op(TOp::Div, {X, r})}, 1);
  op(TOp::Mul, {r, op(TOp::Sum, {Y}, 1)});
  op(TOp::Sum, {op(TOp::Sum, {X}, 1)}, 0);
  {  // sum-centred-square: layernorm's sum of squared deviations from the row mean
    const Id c = op(TOp::Sub, {X, op(TOp::Div, {op(TOp::Sum, {X}, 1), dd})});
    op(TOp::Sum, {op(TOp::Mul, {c, c})}, 1);
  }
  tg.splitax(1, F, X);
  tg.splitax(1, F, op(TOp::Sum, {Y}, 0));
  op(TOp::Max, {op(TOp::Max, {tg.splitax(1, F, Y)}, 2)}, 1);  // max-merge
  // exp-sub-chain: X relative to a row max r, rescaled onto q (and a b that would widen: refused)
  op(TOp::Mul, {op(TOp::Exp, {op(TOp::Sub, {X, r})}), op(TOp::Exp, {op(TOp::Sub, {r, q})})});
  op(TOp::Mul, {op(TOp::Exp, {op(TOp::Sub, {r, X})}), op(TOp::Exp, {op(TOp::Sub, {X, q})})});
  tg.splitax(2, F, U(X, 0));
  tg.splitax(1, F, U(X, 2));
  for (TOp red : kReduce) {
    U(op(red, {X}, 1), 0);
    S(op(red, {U(X, 0)}, 1), 0);
  }
  S(S(U(U(X, 0), 0), 0), 0);
  U(U(X, 1), 0);
  S(U(r, 0), 2);
  U(S(r, 1), 1);
  S(U(X, 0), 0);
  // parallel structure
  op(TOp::Combine, {part(X)}, 1);
  op(TOp::Partition, {op(TOp::Combine, {part(Y)}, 1)}, 1, gg);
  op(TOp::Reduce, {op(TOp::Sum, {part(X)}, 2)});
  op(TOp::Reduce, {op(TOp::Mul, {rep(r), part(X)})});
  // lifting partition / replicate out of a block body (both branches of every axis shift)
  Id D = tg.input("D", {d, d}), e = tg.input("e", {Dim(1), d}), f = tg.input("f", {d, Dim(1)});
  auto part0 = [&](Id x) { return op(TOp::Partition, {x}, 0, gg); };
  U(part(X), 1);
  U(part(X), 2);
  U(part(X), 3);
  U(rep(X), 1);
  S(part(e), 1);
  S(part0(f), 2);
  S(rep(r), 2);
  tg.splitax(1, F, part(D));
  tg.splitax(2, F, part0(D));
  tg.splitax(2, F, rep(X));
  for (TOp red : kReduce) {
    op(red, {part(X)}, 1);
    op(red, {rep(X)}, 2);
  }
  // split / concat along an uncut tile axis (d is even at every binding below)
  Id E = tg.input("E", {d, d});
  tg.split_part(2, 2, 1, part0(D));
  tg.split_part(2, 2, 0, rep(X));
  op(TOp::Concat, {part0(D), part0(E)}, 2);
  op(TOp::Concat, {rep(X), rep(Y)}, 2);
  for (TOp u : kUnary) op(u, {part(X)});
  for (TOp b : kBinary) {
    op(b, {part(X), part(Y)});
    op(b, {rep(r), part(X)});
    op(b, {part(X), rep(r)});
    op(b, {part(X), two});
    op(b, {two, part(X)});
    op(b, {rep(X), two});
    op(b, {two, rep(X)});
  }
  for (TOp u : kUnary) {
    U(op(u, {X}), 0);
    S(op(u, {r}), 1);
    tg.splitax(1, F, op(u, {Y}));
    part(op(u, {X}));
    op(TOp::Combine, {op(u, {part(Z)})}, 1);
    op(u, {rep(X)});
  }
  Id scalar = tg.input("s", {});  // a row's statistic at one row, once its unit axes are squeezed
  for (TOp b : kBinary) {
    U(op(b, {X, Y}), 0);
    U(op(b, {X, two}), 1);
    U(op(b, {scalar, two}), 0);  // both operands scalars: not pushed inward (the result is [1])
    S(op(b, {r, q}), 1);
    tg.splitax(1, F, op(b, {X, r}));
    tg.splitax(1, F, op(b, {Y, Z}));
    part(op(b, {X, Y}));
    op(b, {rep(X), rep(Y)});
    // outward: an op on unsqueezed / squeezed operands, or a scalar beside one
    op(b, {U(X, 0), U(Y, 0)});
    op(b, {U(X, 1), two});
    op(b, {two, U(X, 1)});
    op(b, {S(r, 1), two});
    op(b, {two, S(r, 1)});
  }
}

std::map<std::string, Tensor> inputs_for(const Program& p, const DimBindings& b, uint64_t seed, bool positive) {
  std::map<std::string, Tensor> in;
  for (int id : p.inputs) {
    const Value& v = p.value(id);
    Tensor t = random_tensor(DType::F32, concrete_shape(v.type.shape, b), seed, v.name);
    for (float& x : t.data) x = v.name.rfind("__ones", 0) == 0 ? 1.0f : positive ? std::fabs(x) + 0.25f : x;
    in[v.name] = std::move(t);
  }
  return in;
}

}  // namespace

TEST_CASE("axioms: every rule is sound on random inputs for several bindings", "[egraph][axioms][soundness]") {
  TensorGraph tg;
  std::vector<Rewrite> rules = tensor_axioms(tg);
  seed_terms(tg);
  struct Sample {
    Id lhs, rhs;
  };
  std::vector<std::vector<Sample>> samples(rules.size());
  Runner runner(&rules);
  runner.on_apply = [&](size_t rule, Id lhs, Id rhs) {
    if (samples[rule].size() < 4) samples[rule].push_back({lhs, rhs});
  };
  RunReport rep = runner.run(tg.graph(), RunLimits{60000, 2, 30.0});
  INFO("stopped: " << stop_reason_name(rep.stop) << ", nodes " << rep.nodes);

  std::string never_applied;
  for (size_t r = 0; r < rules.size(); ++r)
    if (samples[r].empty()) never_applied += rules[r].name + " ";
  INFO("rules with no application on the seed terms: " << never_applied);
  CHECK(never_applied.empty());

  const std::vector<DimBindings> bindings = {
      {{"n", 2}, {"d", 6}, {"m", 3}, {"F", 2}, {"g", 3}},
      {{"n", 3}, {"d", 12}, {"m", 2}, {"F", 3}, {"g", 2}},
      {{"n", 1}, {"d", 4}, {"m", 5}, {"F", 4}, {"g", 4}},
  };
  size_t checked = 0;
  for (size_t r = 0; r < rules.size(); ++r) {
    for (const Sample& s : samples[r]) {
      Program a = tg.to_program({s.lhs}), b = tg.to_program({s.rhs});
      for (size_t bi = 0; bi < bindings.size(); ++bi) {
        const bool positive = bi % 2 == 1;
        std::vector<Tensor> ra = interpret(a, bindings[bi], inputs_for(a, bindings[bi], 7 + bi, positive));
        std::vector<Tensor> rb = interpret(b, bindings[bi], inputs_for(b, bindings[bi], 7 + bi, positive));
        INFO("rule " << rules[r].name << ": " << rules[r].lhs.text() << " => " << rules[r].rhs << "\n  lhs " << tg.print(s.lhs) << "\n  rhs "
                     << tg.print(s.rhs) << "\n  binding " << bi);
        REQUIRE(ra[0].shape == rb[0].shape);
        double worst = 0, scale = 0;
        for (size_t i = 0; i < ra[0].data.size(); ++i) {
          double u = ra[0].data[i], v = rb[0].data[i];
          if (std::isnan(u) && std::isnan(v)) continue;
          worst = std::max(worst, std::isnan(u - v) ? INFINITY : std::fabs(u - v));
          scale = std::max(scale, std::fabs(u));
        }
        CHECK(worst <= 1e-4 * (1 + scale));
        ++checked;
      }
    }
  }
  CHECK(checked > 3 * rules.size());
}

TEST_CASE("axioms: classes of different shapes never merge", "[egraph][axioms][shape]") {
  TensorGraph tg;
  Id x = tg.input("X", {Dim::symbol("n"), Dim::symbol("d")});
  Id xt = tg.input("Y", {Dim::symbol("d"), Dim::symbol("n")});
  Id y = tg.input("Z", {Dim::symbol("n"), Dim::symbol("d")});
  REQUIRE_THROWS_AS(tg.graph().merge(x, xt, {Justification::Given, 0}), std::logic_error);
  REQUIRE(tg.graph().find(x) != tg.graph().find(xt));
  REQUIRE(tg.graph().merge(x, y, {Justification::Given, 0}));  // same shape: fine (an assumption)
  // An ill-shaped term is refused when built.
  REQUIRE_THROWS_AS(tg.op(TOp::Squeeze, {x}, 0), std::logic_error);
  REQUIRE_THROWS_AS(tg.op(TOp::Add, {x, xt}), std::logic_error);
}

TEST_CASE("axioms: extraction picks the cheapest equivalent term", "[egraph][axioms][extract]") {
  TensorGraph tg;
  std::vector<Rewrite> rules = tensor_axioms(tg);
  Id x = tg.input("X", {Dim::symbol("n"), Dim::symbol("d")});
  Id t = tg.op(TOp::Squeeze, {tg.op(TOp::Unsqueeze, {tg.op(TOp::Exp, {x})}, 0)}, 0);
  Runner(&rules).run(tg.graph(), RunLimits{10000, 5, 5.0});
  Extractor ex(tg.graph());
  CHECK(ex.cost(t) == 2);
  CHECK(tg.print(t, [&](Id i) -> const ENode& { return ex.best(i); }) == "exp(X)");
}

TEST_CASE("axioms: the grid is lifted only where every block computes its tile of the whole", "[egraph][axioms][partition]") {
  TensorGraph tg;
  std::vector<Rewrite> rules = tensor_axioms(tg);
  const Dim n = Dim::symbol("n"), d = Dim::symbol("d"), g = Dim::symbol("g");
  const DimId gg = tg.dim_id(g);
  Id X = tg.input("X", {n, d}), T = tg.input("T", {n, d / g});
  auto part = [&](Id x) { return tg.op(TOp::Partition, {x}, 1, gg); };
  auto rep = [&](Id x) { return tg.op(TOp::Replicate, {x}, 0, gg); };
  Id whole = tg.op(TOp::Div, {X, tg.op(TOp::Rms, {X}, 1)});
  // Each block divides its columns by the rms of the whole row: the whole, cut and put back.
  Id good = tg.op(TOp::Combine, {tg.op(TOp::Div, {part(X), rep(tg.op(TOp::Rms, {X}, 1))})}, 1);
  // Each block divides by the rms of its own columns only: same shape, a different tensor.
  Id per_tile = tg.op(TOp::Combine, {tg.op(TOp::Div, {part(X), tg.op(TOp::Rms, {part(X)}, 2)})}, 1);
  // Every block multiplies by the same [n, d/g] tile: well-shaped, but no tile of a whole product.
  Id same_tile = tg.op(TOp::Combine, {tg.op(TOp::Mul, {rep(T), part(X)})}, 1);
  REQUIRE_NOTHROW(Runner(&rules).run(tg.graph(), RunLimits{30000, 8, 10.0}));
  const EGraph& eg = tg.graph();
  CHECK(eg.find(good) == eg.find(whole));
  CHECK(eg.find(per_tile) != eg.find(whole));
  CHECK(eg.find(same_tile) != eg.find(good));  // (without the guard, lifting it would build an ill-shaped term and throw)
}

TEST_CASE("axioms: the ops a rewrite can bring in are the algebra's, never an uninterpreted op", "[egraph][axioms]") {
  const std::vector<Op>& in = eg::ops_axioms_introduce();
  auto has = [&](Op op) { return std::find(in.begin(), in.end(), op) != in.end(); };
  // mul-square writes square, rms-def sqrt and div, the exp rules mul and neg.
  for (Op op : {Op::Mul, Op::Div, Op::Add, Op::Sqrt, Op::Square, Op::Sum}) CHECK(has(op));
  // Nothing rewrites into these: the search's enumeration tries them only where the program has them.
  for (Op op : {Op::Tanh, Op::Sigmoid, Op::Gelu, Op::Relu, Op::Abs, Op::Erf, Op::Pow, Op::Minimum, Op::Maximum, Op::Gt, Op::Ge, Op::Eq,
                Op::Ne, Op::Mask})
    CHECK_FALSE(has(op));
}
