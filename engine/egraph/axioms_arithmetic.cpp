// Arithmetic, exact constants and casts (axiom_table.h; the conventions and guards: axioms.cpp).
#include "engine/egraph/axiom_table.h"

namespace prism::eg::axiom {

void arithmetic(Table& t) {
  TensorGraph& tg = t.tg;
  const Shapes sh{&tg};
  // ---- arithmetic ---------------------------------------------------------------------------
  t.rule("add-comm", "(add ?a ?b)", "(add ?b ?a)");
  t.rule("mul-comm", "(mul ?a ?b)", "(mul ?b ?a)");
  t.rule("add-assoc", "(add ?a (add ?b ?c))", "(add (add ?a ?b) ?c)");
  t.rule("add-assoc-rev", "(add (add ?a ?b) ?c)", "(add ?a (add ?b ?c))");
  t.rule("mul-assoc", "(mul ?a (mul ?b ?c))", "(mul (mul ?a ?b) ?c)");
  t.rule("mul-assoc-rev", "(mul (mul ?a ?b) ?c)", "(mul ?a (mul ?b ?c))");
  t.rule("mul-distribute", "(mul ?a (add ?b ?c))", "(add (mul ?a ?b) (mul ?a ?c))");
  t.rule("mul-factor", "(add (mul ?a ?b) (mul ?a ?c))", "(mul ?a (add ?b ?c))");
  t.rule("div-distribute", "(div (add ?a ?b) ?c)", "(add (div ?a ?c) (div ?b ?c))");
  t.rule("div-factor", "(add (div ?a ?c) (div ?b ?c))", "(div (add ?a ?b) ?c)");
  t.rule("div-mul-swap", "(mul (div ?a ?b) ?c)", "(div (mul ?a ?c) ?b)");
  t.rule("mul-div-swap", "(div (mul ?a ?c) ?b)", "(mul (div ?a ?b) ?c)");
  t.rule("div-div", "(div (div ?a ?b) ?c)", "(div ?a (mul ?b ?c))");
  t.rule("div-mul-denominator", "(div ?a (mul ?b ?c))", "(div (div ?a ?b) ?c)");
  t.rule("exp-add", "(exp (add ?a ?b))", "(mul (exp ?a) (exp ?b))");
  t.rule("exp-mul", "(mul (exp ?a) (exp ?b))", "(exp (add ?a ?b))");
  t.rule("sub-add-neg", "(sub ?a ?b)", "(add ?a (neg ?b))");
  t.rule("add-neg-sub", "(add ?a (neg ?b))", "(sub ?a ?b)");
  t.rule("neg-mul", "(mul (neg ?a) ?b)", "(neg (mul ?a ?b))");
  t.rule("neg-mul-rev", "(neg (mul ?a ?b))", "(mul (neg ?a) ?b)");
  t.rule("square-mul", "(square ?x)", "(mul ?x ?x)");
  t.rule("mul-square", "(mul ?x ?x)", "(square ?x)");
  // torch.rsqrt as Llama's RMSNorm multiplies by it. One way only: the rule brings div and sqrt
  // into the search of a program that has rsqrt, and never rsqrt into one that divides by a root
  // (docs/search.md, "The enumeration's ops").
  t.rule("mul-rsqrt", "(mul ?a (rsqrt ?x))", "(div ?a (sqrt ?x))");
  t.rule("log-exp", "(log (exp ?x))", "?x");

  // ---- constants: folding exact ones, the identities of 0 and 1, division by a constant ------
  // Only exact constants (integers, rationals, dims) fold or count as 0 and 1: a float constant
  // stays itself unless it is a short dyadic rational, which the e-graph holds exactly.
  for (TOp b : {TOp::Add, TOp::Sub, TOp::Mul, TOp::Div})
    t.computed("fold-" + s(b), "(" + s(b) + " ?a ?b)", "the constant a " + s(b) + " b, when both are exact",
               [=](const EGraph&, const Subst& m) { return sh.exact(m.var[0]) && sh.exact(m.var[1]); },
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 const Dim a = *sh.exact(m.var[0]), c = *sh.exact(m.var[1]);
                 try {
                   // Only by a divisor that no binding makes zero: x/(d-7) must stay a division.
                   if (b == TOp::Div && !c.provably_nonzero()) return;
                   const Dim r = b == TOp::Add ? a + c : b == TOp::Sub ? a - c : b == TOp::Mul ? a * c : a / c;
                   out.push_back(tg.constant(Constant{r, 0}));
                 } catch (const DimError&) {  // not a dim expression (1/d): left as it is
                 }
               });
  t.rule("add-zero", "(add ?x ?c)", "?x", [=](const EGraph&, const Subst& m) { return sh.rank(m.var[1]) == 0 && sh.is_value(m.var[1], 0); });
  t.rule("sub-zero", "(sub ?x ?c)", "?x", [=](const EGraph&, const Subst& m) { return sh.rank(m.var[1]) == 0 && sh.is_value(m.var[1], 0); });
  t.rule("mul-one", "(mul ?x ?c)", "?x", [=](const EGraph&, const Subst& m) { return sh.rank(m.var[1]) == 0 && sh.is_value(m.var[1], 1); });
  t.rule("div-one", "(div ?x ?c)", "?x", [=](const EGraph&, const Subst& m) { return sh.rank(m.var[1]) == 0 && sh.is_value(m.var[1], 1); });
  // x / c = x * (1/c) for an exact nonzero constant c (x / 8 meets x * 0.125).
  t.computed("div-constant", "(div ?x ?c)", "(mul ?x 1/c)",
             [=](const EGraph&, const Subst& m) { return sh.rank(m.var[1]) == 0 && sh.exact(m.var[1]) && sh.exact(m.var[1])->provably_nonzero(); },
             [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               try {
                 out.push_back(tg.op(TOp::Mul, {m.var[0], tg.constant(Constant{Dim(1) / *sh.exact(m.var[1]), 0})}));
               } catch (const DimError&) {
               }
             });

  // ---- casts: a narrowing rounding (from_program.h) is kept; these hold in IEEE arithmetic -----
  t.rule("cast-cast", "(cast$t (cast$t ?x))", "(cast$t ?x)");
  t.rule("cast-neg", "(cast$t (neg ?x))", "(neg (cast$t ?x))");  // round-to-nearest is symmetric
  t.rule("neg-cast", "(neg (cast$t ?x))", "(cast$t (neg ?x))");
}

}  // namespace prism::eg::axiom
