// Layout: unsqueeze and squeeze through ops and reductions; matmul as a contraction (axiom_table.h; the conventions and guards: axioms.cpp).
#include "engine/egraph/axiom_table.h"

namespace prism::eg::axiom {

void layout(Table& t) {
  TensorGraph& tg = t.tg;
  const Shapes sh{&tg};
  // ---- layout: unsqueeze / squeeze move inward through elementwise ops and reductions ----------
  for (TOp u : kUnary) {
    t.rule("unsqueeze-" + s(u), "(unsqueeze@i (" + head(u) + " ?x))", "(" + head(u) + " (unsqueeze@i ?x))");
    t.rule("squeeze-" + s(u), "(squeeze@i (" + head(u) + " ?x))", "(" + head(u) + " (squeeze@i ?x))");
  }
  for (TOp b : kBinary) {
    // Not where both operands are scalars: a scalar is not unsqueezed (lift), so the op on them
    // would stay a scalar beside the unsqueezed [1] (a row's mean plus eps, at one row).
    t.computed("unsqueeze-" + s(b), "(unsqueeze@i (" + s(b) + " ?a ?b))", "(" + s(b) + " (unsqueeze@i ?a) (unsqueeze@i ?b))",
               [=](const EGraph&, const Subst& m) { return sh.aligned(m.var[0], m.var[1]) && sh.rank(m.var[0]) + sh.rank(m.var[1]) > 0; },
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 out.push_back(tg.op(b, {sh.lift(TOp::Unsqueeze, m.axis[0], m.var[0]), sh.lift(TOp::Unsqueeze, m.axis[0], m.var[1])}));
               });
    // Both operands have size 1 at i (the result has, and neither broadcasts onto a larger size).
    t.computed("squeeze-" + s(b), "(squeeze@i (" + s(b) + " ?a ?b))", "(" + s(b) + " (squeeze@i ?a) (squeeze@i ?b))",
               [=](const EGraph&, const Subst& m) {
                 Id a = m.var[0], c = m.var[1];
                 return sh.aligned(a, c) && (sh.rank(a) == 0 || sh.one(a, m.axis[0])) && (sh.rank(c) == 0 || sh.one(c, m.axis[0]));
               },
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 out.push_back(tg.op(b, {sh.lift(TOp::Squeeze, m.axis[0], m.var[0]), sh.lift(TOp::Squeeze, m.axis[0], m.var[1])}));
               });
  }
  // And outward: an op on operands unsqueezed alike (or a scalar) is the unsqueezed op. Without
  // it, a scale the program applies after a matmul could be moved into the matmul only from the
  // family's side of a proof, and pruning (which saturates the program's side) would drop it.
  for (TOp b : kBinary) {
    t.rule(s(b) + "-unsqueeze", "(" + s(b) + " (unsqueeze@i ?a) (unsqueeze@i ?b))", "(unsqueeze@i (" + s(b) + " ?a ?b))",
           [=](const EGraph&, const Subst& m) { return sh.rank(m.var[0]) == sh.rank(m.var[1]); });
    t.past_scalar(s(b), "unsqueeze@i", "unsqueeze");
    // squeeze@i needs size 1 at i, which ?x has (it is squeezed there).
    t.past_scalar(s(b), "squeeze@i", "squeeze");
  }
  t.rule("squeeze-unsqueeze", "(squeeze@i (unsqueeze@i ?x))", "?x");
  t.rule("unsqueeze-squeeze", "(unsqueeze@i (squeeze@i ?x))", "?x");
  t.computed("squeeze-unsqueeze-commute", "(squeeze@i (unsqueeze@j ?x))", "i<j: (unsqueeze@j-1 (squeeze@i ?x)); i>j: (unsqueeze@j (squeeze@i-1 ?x))",
             [](const EGraph&, const Subst& m) { return m.axis[0] != m.axis[1]; },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               int i = m.axis[0], j = m.axis[1];
               if (i < j) out.push_back(tg.op(TOp::Unsqueeze, {tg.op(TOp::Squeeze, {m.var[0]}, i)}, j - 1));
               else out.push_back(tg.op(TOp::Unsqueeze, {tg.op(TOp::Squeeze, {m.var[0]}, i - 1)}, j));
             });
  // Canonical order of two squeezes (the higher axis innermost) and of two unsqueezes (the lower innermost).
  t.rule("squeeze-order", "(squeeze@i (squeeze@j ?x))", "(squeeze@j (squeeze@i+1 ?x))",
         [](const EGraph&, const Subst& m) { return m.axis[0] >= m.axis[1]; });
  t.rule("unsqueeze-order", "(unsqueeze@i (unsqueeze@j ?x))", "(unsqueeze@j+1 (unsqueeze@i ?x))",
         [](const EGraph&, const Subst& m) { return m.axis[0] <= m.axis[1]; });
  for (TOp r : kReduce) {
    t.computed("unsqueeze-" + s(r), "(unsqueeze@i (" + s(r) + "@j ?x))", "(" + s(r) + "@j' (unsqueeze@i ?x)), j' = j<i ? j : j+1", {},
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 int i = m.axis[0], j = m.axis[1];
                 out.push_back(tg.op(r, {tg.op(TOp::Unsqueeze, {m.var[0]}, i)}, j < i ? j : j + 1));
               });
    t.computed("squeeze-" + s(r), "(squeeze@i (" + s(r) + "@j ?x))", "(" + s(r) + "@j' (squeeze@i ?x)), i != j, j' = j<i ? j : j-1",
               [](const EGraph&, const Subst& m) { return m.axis[0] != m.axis[1]; },
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 int i = m.axis[0], j = m.axis[1];
                 out.push_back(tg.op(r, {tg.op(TOp::Squeeze, {m.var[0]}, i)}, j < i ? j : j - 1));
               });
  }

  // ---- contraction: matmul is a sum over an explicit axis of a broadcast product -------------
  // [.., n, k] x [.., k, m]: unsqueeze@r(a) is [.., n, k, 1], unsqueeze@r-2(b) is [.., 1, k, m].
  t.computed("matmul-contract", "(matmul ?a ?b)", "(squeeze@r-1 (sum@r-1 (mul (unsqueeze@r ?a) (unsqueeze@r-2 ?b)))), r = rank",
             [=](const EGraph&, const Subst& m) { return sh.rank(m.var[0]) == sh.rank(m.var[1]) && sh.rank(m.var[0]) >= 2; },
             [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               int r = int(sh.rank(m.var[0]));
               Id prod = tg.op(TOp::Mul, {tg.op(TOp::Unsqueeze, {m.var[0]}, r), tg.op(TOp::Unsqueeze, {m.var[1]}, r - 2)});
               out.push_back(tg.op(TOp::Squeeze, {tg.op(TOp::Sum, {prod}, r - 1)}, r - 1));
             });
  // Only when the summed sizes agree: a b of size 1 there broadcasts in the product, which is no
  // matmul (matches like that appear once ops move outward through unsqueeze).
  t.rule("contract-matmul", "(squeeze@j (sum@j (mul (unsqueeze@j+1 ?a) (unsqueeze@j-1 ?b))))", "(matmul ?a ?b)",
         [=, &tg](const EGraph&, const Subst& m) {
           const size_t r = sh.rank(m.var[0]);
           return r == sh.rank(m.var[1]) && int(r) == m.axis[0] + 1 && r >= 2 && tg.dim_at(m.var[0], int(r) - 1) == tg.dim_at(m.var[1], int(r) - 2);
         });
}

}  // namespace prism::eg::axiom
