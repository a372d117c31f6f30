// Reductions and splits (axiom_table.h; the conventions and guards: axioms.cpp).
#include "engine/egraph/axiom_table.h"

namespace prism::eg::axiom {

void reductions(Table& t) {
  TensorGraph& tg = t.tg;
  const Shapes sh{&tg};
  // ---- reductions -----------------------------------------------------------------------------
  auto both_span = [=, &tg](const Subst& m) {
    Id a = m.var[0], b = m.var[1];
    return sh.same_rank(a, b) && tg.dim_at(a, m.axis[0]) == tg.dim_at(b, m.axis[0]);
  };
  t.rule("sum-add", "(sum@i (add ?a ?b))", "(add (sum@i ?a) (sum@i ?b))", [=](const EGraph&, const Subst& m) { return both_span(m); });
  t.rule("sum-add-rev", "(add (sum@i ?a) (sum@i ?b))", "(sum@i (add ?a ?b))", [=](const EGraph&, const Subst& m) { return both_span(m); });
  // A factor of size 1 along the summed axis (or a scalar) does not depend on the summed index.
  auto factor_out = [=](Id factor, Id other, int axis) {
    return sh.aligned(factor, other) && sh.rank(other) > size_t(axis) && (sh.rank(factor) == 0 || sh.one(factor, axis));
  };
  t.rule("sum-mul-factor", "(sum@i (mul ?a ?b))", "(mul ?a (sum@i ?b))",
         [=](const EGraph&, const Subst& m) { return factor_out(m.var[0], m.var[1], m.axis[0]); });
  t.rule("mul-sum-factor", "(mul ?a (sum@i ?b))", "(sum@i (mul ?a ?b))",
         [=](const EGraph&, const Subst& m) { return factor_out(m.var[0], m.var[1], m.axis[0]); });
  t.rule("sum-div-factor", "(sum@i (div ?a ?b))", "(div (sum@i ?a) ?b)",
         [=](const EGraph&, const Subst& m) { return factor_out(m.var[1], m.var[0], m.axis[0]); });
  t.rule("div-sum-factor", "(div (sum@i ?a) ?b)", "(sum@i (div ?a ?b))",
         [=](const EGraph&, const Subst& m) { return factor_out(m.var[1], m.var[0], m.axis[0]); });
  t.rule("sum-commute", "(sum@i (sum@j ?x))", "(sum@j (sum@i ?x))", [](const EGraph&, const Subst& m) { return m.axis[0] != m.axis[1]; });
  // sum(k, x) = sum(F, sum(k/F, x)): split axis i into [F, k/F], sum both, drop the extra axis.
  t.computed("sum-split", "(sum@i ?x)", "(squeeze@i+1 (sum@i (sum@i+1 (splitax@i$F ?x)))) for each known split F of k", {},
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               DimId k = tg.dim_at(m.var[0], m.axis[0]);
               const auto pairs = tg.split_pairs();  // copy: adding a splitax may extend it
               for (auto [size, f] : pairs) {
                 if (size != k || f == k || f == tg.one()) continue;
                 int i = m.axis[0];
                 Id split = tg.op(TOp::SplitAx, {m.var[0]}, i, f);
                 out.push_back(tg.op(TOp::Squeeze, {tg.op(TOp::Sum, {tg.op(TOp::Sum, {split}, i + 1)}, i)}, i + 1));
               }
             });
  t.rule("sum-merge", "(squeeze@i+1 (sum@i (sum@i+1 (splitax@i$F ?x))))", "(sum@i ?x)");
  // The max of the pieces' maxes is the max ([.., 1, 1, ..]: the unit axis where a split of a
  // size-1 axis puts it, as splitax-<op> does).
  t.rule("max-merge", "(max@i (max@i+1 (splitax@i$F ?x)))", "(unsqueeze@i (max@i ?x))");
  // Rescaling a sum taken relative to b onto c (online softmax): exp(a - b) * exp(b - c) =
  // exp(a - c). Only when b spans no axis that a and c do not (it would widen the left side).
  t.rule("exp-sub-chain", "(mul (exp (sub ?a ?b)) (exp (sub ?b ?c)))", "(exp (sub ?a ?c))", [=, &tg](const EGraph&, const Subst& m) {
    const Id a = m.var[0], b = m.var[1], c = m.var[2];
    const size_t r = std::max({sh.rank(a), sh.rank(b), sh.rank(c)});
    if (sh.rank(b) > std::max(sh.rank(a), sh.rank(c))) return false;
    for (size_t i = 0; i < r; ++i) {
      const DimId db = tg.dim_at(b, int(i), r);
      if (db != tg.one() && db != tg.dim_at(a, int(i), r) && db != tg.dim_at(c, int(i), r)) return false;
    }
    return true;
  });
  // The one-pass variance (one_pass_variance.h): the sum of squared deviations from the mean m
  // over axis i is sum(x^2) - k m^2, k the size of axis i, since sum(x) = k m. The mean is matched
  // as it is lowered (sum / k), so the rule needs no algebra to find it.
  t.rule("sum-centred-square", "(sum@i (mul (sub ?x (div (sum@i ?x) ?k)) (sub ?x (div (sum@i ?x) ?k))))",
         "(sub (sum@i (mul ?x ?x)) (mul ?k (mul (div (sum@i ?x) ?k) (div (sum@i ?x) ?k))))", [=, &tg](const EGraph&, const Subst& m) {
           const std::optional<Dim> k = sh.exact(m.var[1]);
           return sh.rank(m.var[0]) > size_t(m.axis[0]) && sh.rank(m.var[1]) == 0 && k && *k == tg.dim(tg.dim_at(m.var[0], m.axis[0]));
         });
  t.computed("rms-def", "(rms@i ?x)", "(sqrt (div (sum@i (mul ?x ?x)) k)), k = the size of axis i", {},
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               Id x = m.var[0];
               Id k = tg.constant(Constant{tg.dim(tg.dim_at(x, m.axis[0])), 0});
               out.push_back(tg.op(TOp::Sqrt, {tg.op(TOp::Div, {tg.op(TOp::Sum, {tg.op(TOp::Mul, {x, x})}, m.axis[0]), k})}));
             });

  // ---- splits move inward, like the other layout ops --------------------------------------------
  for (TOp u : kUnary) t.rule("splitax-" + s(u), "(splitax@i$F (" + head(u) + " ?x))", "(" + head(u) + " (splitax@i$F ?x))");
  for (TOp b : kBinary) {
    // An operand that spans axis i is split; one that broadcasts along it (size 1) gets a second 1.
    auto part = [&tg](Id x, int axis, DimId f, DimId k) -> Id {
      if (tg.rank(x) == 0) return x;
      return tg.dim_at(x, axis) == k ? tg.op(TOp::SplitAx, {x}, axis, f) : tg.op(TOp::Unsqueeze, {x}, axis);
    };
    t.computed("splitax-" + s(b), "(splitax@i$F (" + s(b) + " ?a ?b))",
               "(" + s(b) + " (splitax@i$F ?a) (splitax@i$F ?b)); a side of size 1 at i gets unsqueeze@i instead",
               [=, &tg](const EGraph&, const Subst& m) {
                 Id a = m.var[0], c = m.var[1];
                 if (!sh.aligned(a, c)) return false;
                 size_t r = std::max(sh.rank(a), sh.rank(c));
                 DimId ka = tg.dim_at(a, m.axis[0], r), kc = tg.dim_at(c, m.axis[0], r);
                 return ka != tg.one() ? (kc == ka || kc == tg.one()) : kc != tg.one();
               },
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 size_t r = std::max(sh.rank(m.var[0]), sh.rank(m.var[1]));
                 DimId k = tg.dim_at(m.var[0], m.axis[0], r);
                 if (k == tg.one()) k = tg.dim_at(m.var[1], m.axis[0], r);
                 out.push_back(tg.op(b, {part(m.var[0], m.axis[0], m.payload[0], k), part(m.var[1], m.axis[0], m.payload[0], k)}));
               });
  }
  t.computed("splitax-unsqueeze", "(splitax@i$F (unsqueeze@j ?x))", "j>i: (unsqueeze@j+1 (splitax@i$F ?x)); j<i: (unsqueeze@j (splitax@i-1$F ?x))",
             [](const EGraph&, const Subst& m) { return m.axis[0] != m.axis[1]; },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               int i = m.axis[0], j = m.axis[1];
               DimId f = m.payload[0];
               if (j > i) out.push_back(tg.op(TOp::Unsqueeze, {tg.op(TOp::SplitAx, {m.var[0]}, i, f)}, j + 1));
               else out.push_back(tg.op(TOp::Unsqueeze, {tg.op(TOp::SplitAx, {m.var[0]}, i - 1, f)}, j));
             });
  t.computed("splitax-sum", "(splitax@i$F (sum@j ?x))", "(sum@j' (splitax@i$F ?x)), i != j, j' = j<i ? j : j+1",
             [](const EGraph&, const Subst& m) { return m.axis[0] != m.axis[1]; },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               int i = m.axis[0], j = m.axis[1];
               out.push_back(tg.op(TOp::Sum, {tg.op(TOp::SplitAx, {m.var[0]}, i, m.payload[0])}, j < i ? j : j + 1));
             });
}

}  // namespace prism::eg::axiom
