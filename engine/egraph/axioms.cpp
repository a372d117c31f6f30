// THE rule table. Every rule is an identity between tensors with numpy semantics that holds for
// every binding of the symbolic dims that makes both sides well-shaped; tests check each one
// numerically against the reference interpreter. Conventions (see tensor_lang.h): reductions keep
// their axis (size 1); binary ops broadcast; from_program pads operands to equal rank except
// scalars (rank 0), so the layout rules handle "equal rank" and "one side is a scalar".
//
// Guards, and why they are needed:
//   * moving a factor across sum@i / a layout op requires the factor to have size 1 on that axis
//     (the shape analysis decides: dim_at(...) == 1), else the factor varies with the summed index;
//   * sum over + requires both terms to have the summed axis (neither broadcast along it);
//   * partition / replicate are lifted out of an op on tiles only when every block then computes
//     its tile of the op on whole tensors: the op works on an axis other than the grid axis and
//     the cut axis (a per-tile reduction is not a tile of the whole reduction), both operands of
//     a binary op have equal rank (the grid axes line up), and a replicated operand has size 1 on
//     the cut axis (else every block would reuse one tile of it);
//   * the split rule only splits an axis of size k by a factor F already used somewhere in the
//     e-graph as a split of a size-k axis (so F | k is an assumption the terms already make).
#include "engine/egraph/axioms.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

namespace prism::eg {

namespace {

// The layout rules hold for every elementwise op and every reduction, whatever it computes.
const std::vector<TOp> kUnary = term_ops(OpClass::Unary);
const std::vector<TOp> kBinary = term_ops(OpClass::Binary);
const std::vector<TOp> kReduce = term_ops(OpClass::Reduce);

std::string s(TOp op) { return top_name(op); }
// A unary op as it heads a pattern: a cast carries the dtype it rounds to in its payload, bound
// as $t so a rule that moves the cast keeps it (f16 and bf16 are different roundings).
std::string head(TOp u) { return s(u) + (u == TOp::Cast ? "$t" : ""); }

struct Table {
  TensorGraph& tg;
  std::vector<Rewrite> rules;
  bool lifting = false;  // the rules being added lift a grid outward (Rewrite::lifts_grid)

  void rule(const std::string& name, const std::string& lhs, const std::string& rhs, Rewrite::Guard guard = {}) {
    rules.push_back(Rewrite::make(name, lhs, rhs, resolve_top, std::move(guard)));
    rules.back().lifts_grid = lifting;
  }
  Rewrite& named(const std::string& name) {
    auto it = std::find_if(rules.begin(), rules.end(), [&](const Rewrite& r) { return r.name == name; });
    if (it == rules.end()) throw std::logic_error("axioms: no rule '" + name + "' to mark");
    return *it;
  }
  // Marks the named rules exact only over the reals (Rewrite::reals_only); every name must exist.
  void reals_only(const std::vector<std::string>& names) {
    for (const std::string& name : names) named(name).reals_only = true;
  }
  // Marks the named rules as ones a grid's lifting needs (Rewrite::lifts_grid).
  void lifts_grid(const std::vector<std::string>& names) {
    for (const std::string& name : names) named(name).lifts_grid = true;
  }
  // A rule whose right-hand side is computed (new axes, a choice of factors).
  void computed(const std::string& name, const std::string& lhs, const std::string& rhs_doc, Rewrite::Guard guard,
                std::function<void(const Pattern&, EGraph&, const Subst&, std::vector<Id>&)> apply) {
    Rewrite r;
    r.name = name;
    r.lhs = Pattern(lhs, resolve_top);
    r.guard = std::move(guard);
    auto lhs_copy = std::make_shared<Pattern>(r.lhs);
    r.apply = [lhs_copy, apply](EGraph& g, const Subst& sub, std::vector<Id>& out) { apply(*lhs_copy, g, sub, out); };
    r.rhs = rhs_doc;
    r.lifts_grid = lifting;
    rules.push_back(std::move(r));
  }
};

}  // namespace

std::vector<Rewrite> tensor_axioms(TensorGraph& tg) {
  Table t{tg, {}};
  auto rank = [&tg](Id id) { return tg.rank(id); };
  auto one = [&tg](Id id, int axis) { return tg.dim_at(id, axis) == tg.one(); };
  auto same_rank = [=](Id a, Id b) { return rank(a) == rank(b) && rank(a) > 0; };
  // Layout op `op`@axis applied to an operand of a binary op: scalars broadcast and stay as they are.
  auto lift = [&tg](TOp op, int axis, Id x) { return tg.rank(x) == 0 ? x : tg.op(op, {x}, axis); };
  auto aligned = [=](Id a, Id b) { return rank(a) == rank(b) || rank(a) == 0 || rank(b) == 0; };

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
  auto exact = [&tg](Id id) -> std::optional<Dim> {
    const Constant* c = tg.constant_of(id);
    return c && c->exact ? c->exact : std::nullopt;
  };
  // A constant written as a division by a dim that may be zero ((d-7)/(d-7)) is no 0 or 1: it is
  // undefined at d = 7 (dim.h).
  auto is_value = [=](Id id, int64_t v) {
    const std::optional<Dim> d = exact(id);
    return d && *d == Dim(v) && d->zero_divisors().empty();
  };
  for (TOp b : {TOp::Add, TOp::Sub, TOp::Mul, TOp::Div})
    t.computed("fold-" + s(b), "(" + s(b) + " ?a ?b)", "the constant a " + s(b) + " b, when both are exact",
               [=](const EGraph&, const Subst& m) { return exact(m.var[0]) && exact(m.var[1]); },
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 const Dim a = *exact(m.var[0]), c = *exact(m.var[1]);
                 try {
                   // Only by a divisor that no binding makes zero: x/(d-7) must stay a division.
                   if (b == TOp::Div && !c.provably_nonzero()) return;
                   const Dim r = b == TOp::Add ? a + c : b == TOp::Sub ? a - c : b == TOp::Mul ? a * c : a / c;
                   out.push_back(tg.constant(Constant{r, 0}));
                 } catch (const DimError&) {  // not a dim expression (1/d): left as it is
                 }
               });
  t.rule("add-zero", "(add ?x ?c)", "?x", [=](const EGraph&, const Subst& m) { return rank(m.var[1]) == 0 && is_value(m.var[1], 0); });
  t.rule("sub-zero", "(sub ?x ?c)", "?x", [=](const EGraph&, const Subst& m) { return rank(m.var[1]) == 0 && is_value(m.var[1], 0); });
  t.rule("mul-one", "(mul ?x ?c)", "?x", [=](const EGraph&, const Subst& m) { return rank(m.var[1]) == 0 && is_value(m.var[1], 1); });
  t.rule("div-one", "(div ?x ?c)", "?x", [=](const EGraph&, const Subst& m) { return rank(m.var[1]) == 0 && is_value(m.var[1], 1); });
  // x / c = x * (1/c) for an exact nonzero constant c (x / 8 meets x * 0.125).
  t.computed("div-constant", "(div ?x ?c)", "(mul ?x 1/c)",
             [=](const EGraph&, const Subst& m) { return rank(m.var[1]) == 0 && exact(m.var[1]) && exact(m.var[1])->provably_nonzero(); },
             [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               try {
                 out.push_back(tg.op(TOp::Mul, {m.var[0], tg.constant(Constant{Dim(1) / *exact(m.var[1]), 0})}));
               } catch (const DimError&) {
               }
             });

  // ---- casts: a narrowing rounding (from_program.h) is kept; these hold in IEEE arithmetic -----
  t.rule("cast-cast", "(cast$t (cast$t ?x))", "(cast$t ?x)");
  t.rule("cast-neg", "(cast$t (neg ?x))", "(neg (cast$t ?x))");  // round-to-nearest is symmetric
  t.rule("neg-cast", "(neg (cast$t ?x))", "(cast$t (neg ?x))");

  // ---- layout: unsqueeze / squeeze move inward through elementwise ops and reductions ----------
  for (TOp u : kUnary) {
    t.rule("unsqueeze-" + s(u), "(unsqueeze@i (" + head(u) + " ?x))", "(" + head(u) + " (unsqueeze@i ?x))");
    t.rule("squeeze-" + s(u), "(squeeze@i (" + head(u) + " ?x))", "(" + head(u) + " (squeeze@i ?x))");
  }
  for (TOp b : kBinary) {
    // Not where both operands are scalars: a scalar is not unsqueezed (lift), so the op on them
    // would stay a scalar beside the unsqueezed [1] (a row's mean plus eps, at one row).
    t.computed("unsqueeze-" + s(b), "(unsqueeze@i (" + s(b) + " ?a ?b))", "(" + s(b) + " (unsqueeze@i ?a) (unsqueeze@i ?b))",
               [=](const EGraph&, const Subst& m) { return aligned(m.var[0], m.var[1]) && rank(m.var[0]) + rank(m.var[1]) > 0; },
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 out.push_back(tg.op(b, {lift(TOp::Unsqueeze, m.axis[0], m.var[0]), lift(TOp::Unsqueeze, m.axis[0], m.var[1])}));
               });
    // Both operands have size 1 at i (the result has, and neither broadcasts onto a larger size).
    t.computed("squeeze-" + s(b), "(squeeze@i (" + s(b) + " ?a ?b))", "(" + s(b) + " (squeeze@i ?a) (squeeze@i ?b))",
               [=](const EGraph&, const Subst& m) {
                 Id a = m.var[0], c = m.var[1];
                 return aligned(a, c) && (rank(a) == 0 || one(a, m.axis[0])) && (rank(c) == 0 || one(c, m.axis[0]));
               },
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 out.push_back(tg.op(b, {lift(TOp::Squeeze, m.axis[0], m.var[0]), lift(TOp::Squeeze, m.axis[0], m.var[1])}));
               });
  }
  // And outward: an op on operands unsqueezed alike (or a scalar) is the unsqueezed op. Without
  // it, a scale the program applies after a matmul could be moved into the matmul only from the
  // family's side of a proof, and pruning (which saturates the program's side) would drop it.
  for (TOp b : kBinary) {
    t.rule(s(b) + "-unsqueeze", "(" + s(b) + " (unsqueeze@i ?a) (unsqueeze@i ?b))", "(unsqueeze@i (" + s(b) + " ?a ?b))",
           [=](const EGraph&, const Subst& m) { return rank(m.var[0]) == rank(m.var[1]); });
    t.rule(s(b) + "-unsqueeze-scalar", "(" + s(b) + " (unsqueeze@i ?a) ?c)", "(unsqueeze@i (" + s(b) + " ?a ?c))",
           [=](const EGraph&, const Subst& m) { return rank(m.var[1]) == 0; });
    t.rule(s(b) + "-scalar-unsqueeze", "(" + s(b) + " ?c (unsqueeze@i ?a))", "(unsqueeze@i (" + s(b) + " ?c ?a))",
           [=](const EGraph&, const Subst& m) { return rank(m.var[0]) == 0; });
    // squeeze@i needs size 1 at i, which ?a has (it is squeezed there).
    t.rule(s(b) + "-squeeze-scalar", "(" + s(b) + " (squeeze@i ?a) ?c)", "(squeeze@i (" + s(b) + " ?a ?c))",
           [=](const EGraph&, const Subst& m) { return rank(m.var[1]) == 0; });
    t.rule(s(b) + "-scalar-squeeze", "(" + s(b) + " ?c (squeeze@i ?a))", "(squeeze@i (" + s(b) + " ?c ?a))",
           [=](const EGraph&, const Subst& m) { return rank(m.var[0]) == 0; });
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
             [=](const EGraph&, const Subst& m) { return rank(m.var[0]) == rank(m.var[1]) && rank(m.var[0]) >= 2; },
             [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               int r = int(rank(m.var[0]));
               Id prod = tg.op(TOp::Mul, {tg.op(TOp::Unsqueeze, {m.var[0]}, r), tg.op(TOp::Unsqueeze, {m.var[1]}, r - 2)});
               out.push_back(tg.op(TOp::Squeeze, {tg.op(TOp::Sum, {prod}, r - 1)}, r - 1));
             });
  // Only when the summed sizes agree: a b of size 1 there broadcasts in the product, which is no
  // matmul (matches like that appear once ops move outward through unsqueeze).
  t.rule("contract-matmul", "(squeeze@j (sum@j (mul (unsqueeze@j+1 ?a) (unsqueeze@j-1 ?b))))", "(matmul ?a ?b)",
         [=, &tg](const EGraph&, const Subst& m) {
           const size_t r = rank(m.var[0]);
           return r == rank(m.var[1]) && int(r) == m.axis[0] + 1 && r >= 2 && tg.dim_at(m.var[0], int(r) - 1) == tg.dim_at(m.var[1], int(r) - 2);
         });

  // ---- reductions -----------------------------------------------------------------------------
  auto both_span = [=, &tg](const Subst& m) {
    Id a = m.var[0], b = m.var[1];
    return same_rank(a, b) && tg.dim_at(a, m.axis[0]) == tg.dim_at(b, m.axis[0]);
  };
  t.rule("sum-add", "(sum@i (add ?a ?b))", "(add (sum@i ?a) (sum@i ?b))", [=](const EGraph&, const Subst& m) { return both_span(m); });
  t.rule("sum-add-rev", "(add (sum@i ?a) (sum@i ?b))", "(sum@i (add ?a ?b))", [=](const EGraph&, const Subst& m) { return both_span(m); });
  // A factor of size 1 along the summed axis (or a scalar) does not depend on the summed index.
  auto factor_out = [=](Id factor, Id other, int axis) {
    return aligned(factor, other) && rank(other) > size_t(axis) && (rank(factor) == 0 || one(factor, axis));
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
    const size_t r = std::max({rank(a), rank(b), rank(c)});
    if (rank(b) > std::max(rank(a), rank(c))) return false;
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
           const std::optional<Dim> k = exact(m.var[1]);
           return rank(m.var[0]) > size_t(m.axis[0]) && rank(m.var[1]) == 0 && k && *k == tg.dim(tg.dim_at(m.var[0], m.axis[0]));
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
                 if (!aligned(a, c)) return false;
                 size_t r = std::max(rank(a), rank(c));
                 DimId ka = tg.dim_at(a, m.axis[0], r), kc = tg.dim_at(c, m.axis[0], r);
                 return ka != tg.one() ? (kc == ka || kc == tg.one()) : kc != tg.one();
               },
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 size_t r = std::max(rank(m.var[0]), rank(m.var[1]));
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

  // ---- parallel structure: grid axis first ------------------------------------------------------
  t.rule("combine-partition", "(combine@a (partition@a$g ?x))", "?x");
  t.rule("partition-combine", "(partition@a$g (combine@a ?y))", "?y",
         [&tg](const EGraph&, const Subst& m) { return tg.dim_at(m.var[0], 0) == m.payload[0]; });
  for (TOp u : kUnary) {
    t.rule("partition-" + s(u), "(partition@a$g (" + head(u) + " ?x))", "(" + head(u) + " (partition@a$g ?x))");
    t.rule("combine-" + s(u), "(combine@a (" + head(u) + " ?y))", "(" + head(u) + " (combine@a ?y))");
    t.rule("replicate-" + s(u), "(" + head(u) + " (replicate$g ?x))", "(replicate$g (" + head(u) + " ?x))");
  }
  for (TOp b : kBinary) {
    t.rule("partition-" + s(b), "(partition@a$g (" + s(b) + " ?x ?y))", "(" + s(b) + " (partition@a$g ?x) (partition@a$g ?y))",
           [=, &tg](const EGraph&, const Subst& m) { return same_rank(m.var[0], m.var[1]) && tg.dim_at(m.var[0], m.axis[0]) == tg.dim_at(m.var[1], m.axis[0]); });
    t.rule("replicate-" + s(b), "(" + s(b) + " (replicate$g ?x) (replicate$g ?y))", "(replicate$g (" + s(b) + " ?x ?y))",
           [=](const EGraph&, const Subst& m) { return same_rank(m.var[0], m.var[1]); });
  }
  // Lifting the grid outward (a block body on tiles -> the tiles of the whole body). A tile's axis
  // j >= 1 is axis j-1 of the tensor it was cut from (the grid axis is 0), so every lifted op
  // shifts its axis by one; an op on the grid axis itself (j = 0) is never lifted.
  t.lifting = true;
  for (TOp u : kUnary) t.rule(s(u) + "-partition", "(" + head(u) + " (partition@a$g ?x))", "(partition@a$g (" + head(u) + " ?x))");
  for (TOp b : kBinary) {
    // Both sides cut the same axis of equal size: block k combines the k-th tiles of both.
    t.rule(s(b) + "-partition", "(" + s(b) + " (partition@a$g ?x) (partition@a$g ?y))", "(partition@a$g (" + s(b) + " ?x ?y))",
           [=, &tg](const EGraph&, const Subst& m) { return same_rank(m.var[0], m.var[1]) && tg.dim_at(m.var[0], m.axis[0]) == tg.dim_at(m.var[1], m.axis[0]); });
    // A replicated operand must have size 1 on the cut axis (it broadcasts along it): then every
    // block sees all of it. One of size d/g would be the same tile for every block: not lifted.
    t.rule(s(b) + "-replicate-partition", "(" + s(b) + " (replicate$g ?x) (partition@a$g ?y))", "(partition@a$g (" + s(b) + " ?x ?y))",
           [=](const EGraph&, const Subst& m) { return same_rank(m.var[0], m.var[1]) && one(m.var[0], m.axis[0]); });
    t.rule(s(b) + "-partition-replicate", "(" + s(b) + " (partition@a$g ?x) (replicate$g ?y))", "(partition@a$g (" + s(b) + " ?x ?y))",
           [=](const EGraph&, const Subst& m) { return same_rank(m.var[0], m.var[1]) && one(m.var[1], m.axis[0]); });
    // A scalar (rank 0) is the same in every block.
    t.rule(s(b) + "-partition-scalar", "(" + s(b) + " (partition@a$g ?x) ?c)", "(partition@a$g (" + s(b) + " ?x ?c))",
           [=](const EGraph&, const Subst& m) { return rank(m.var[1]) == 0; });
    t.rule(s(b) + "-scalar-partition", "(" + s(b) + " ?c (partition@a$g ?x))", "(partition@a$g (" + s(b) + " ?c ?x))",
           [=](const EGraph&, const Subst& m) { return rank(m.var[0]) == 0; });
    t.rule(s(b) + "-replicate-scalar", "(" + s(b) + " (replicate$g ?x) ?c)", "(replicate$g (" + s(b) + " ?x ?c))",
           [=](const EGraph&, const Subst& m) { return rank(m.var[1]) == 0; });
    t.rule(s(b) + "-scalar-replicate", "(" + s(b) + " ?c (replicate$g ?x))", "(replicate$g (" + s(b) + " ?c ?x))",
           [=](const EGraph&, const Subst& m) { return rank(m.var[0]) == 0; });
  }
  // A reduction over a tile axis other than the grid axis and the cut axis (j-1 != a): reducing
  // each tile along an uncut axis is cutting the reduced tensor.
  for (TOp r : kReduce) {
    t.computed(s(r) + "-partition", "(" + s(r) + "@j (partition@a$g ?x))", "(partition@a$g (" + s(r) + "@j-1 ?x)), j >= 1, j-1 != a",
               [](const EGraph&, const Subst& m) { return m.axis[0] >= 1 && m.axis[0] - 1 != m.axis[1]; },
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 out.push_back(tg.op(TOp::Partition, {tg.op(r, {m.var[0]}, m.axis[0] - 1)}, m.axis[1], m.payload[0]));
               });
    t.computed(s(r) + "-replicate", "(" + s(r) + "@j (replicate$g ?x))", "(replicate$g (" + s(r) + "@j-1 ?x)), j >= 1",
               [](const EGraph&, const Subst& m) { return m.axis[0] >= 1; },
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 out.push_back(tg.op(TOp::Replicate, {tg.op(r, {m.var[0]}, m.axis[0] - 1)}, 0, m.payload[0]));
               });
  }
  // Layout ops on a tile axis j >= 1 act on axis j-1 of the cut tensor; the cut axis a moves when
  // an axis is inserted or removed before it. squeeze / splitax of the cut axis itself is not lifted.
  t.computed("unsqueeze-partition", "(unsqueeze@j (partition@a$g ?x))", "(partition@a' (unsqueeze@j-1 ?x)), j >= 1, a' = j-1 <= a ? a+1 : a",
             [](const EGraph&, const Subst& m) { return m.axis[0] >= 1; },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               int j = m.axis[0] - 1, a = m.axis[1];
               out.push_back(tg.op(TOp::Partition, {tg.op(TOp::Unsqueeze, {m.var[0]}, j)}, j <= a ? a + 1 : a, m.payload[0]));
             });
  t.computed("squeeze-partition", "(squeeze@j (partition@a$g ?x))", "(partition@a' (squeeze@j-1 ?x)), j >= 1, j-1 != a, a' = j-1 < a ? a-1 : a",
             [](const EGraph&, const Subst& m) { return m.axis[0] >= 1 && m.axis[0] - 1 != m.axis[1]; },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               int j = m.axis[0] - 1, a = m.axis[1];
               out.push_back(tg.op(TOp::Partition, {tg.op(TOp::Squeeze, {m.var[0]}, j)}, j < a ? a - 1 : a, m.payload[0]));
             });
  t.computed("splitax-partition", "(splitax@j$F (partition@a$g ?x))", "(partition@a' (splitax@j-1$F ?x)), j >= 1, j-1 != a, a' = j-1 < a ? a+1 : a",
             [](const EGraph&, const Subst& m) { return m.axis[0] >= 1 && m.axis[0] - 1 != m.axis[1]; },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               int j = m.axis[0] - 1, a = m.axis[1];
               out.push_back(tg.op(TOp::Partition, {tg.op(TOp::SplitAx, {m.var[0]}, j, m.payload[0])}, j < a ? a + 1 : a, m.payload[1]));
             });
  for (TOp lay : {TOp::Unsqueeze, TOp::Squeeze}) {
    t.computed(s(lay) + "-replicate", "(" + s(lay) + "@j (replicate$g ?x))", "(replicate$g (" + s(lay) + "@j-1 ?x)), j >= 1",
               [](const EGraph&, const Subst& m) { return m.axis[0] >= 1; },
               [=, &tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
                 out.push_back(tg.op(TOp::Replicate, {tg.op(lay, {m.var[0]}, m.axis[0] - 1)}, 0, m.payload[0]));
               });
  }
  t.computed("splitax-replicate", "(splitax@j$F (replicate$g ?x))", "(replicate$g (splitax@j-1$F ?x)), j >= 1",
             [](const EGraph&, const Subst& m) { return m.axis[0] >= 1; },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               out.push_back(tg.op(TOp::Replicate, {tg.op(TOp::SplitAx, {m.var[0]}, m.axis[0] - 1, m.payload[0])}, 0, m.payload[1]));
             });
  // A split part or a concat along a tile axis other than the cut one (j-1 != a) is the cut of
  // the split part or concat of the whole tensors: the axis it moves data along is whole in
  // every tile. Concat's operands are cut alike (equal rank, equal size on the cut axis).
  t.computed("split-partition", "(split@j$P (partition@a$g ?x))", "(partition@a$g (split@j-1$P ?x)), j >= 1, j-1 != a",
             [](const EGraph&, const Subst& m) { return m.axis[0] >= 1 && m.axis[0] - 1 != m.axis[1]; },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               out.push_back(tg.op(TOp::Partition, {tg.op(TOp::SplitPart, {m.var[0]}, m.axis[0] - 1, m.payload[0])}, m.axis[1], m.payload[1]));
             });
  t.computed("split-replicate", "(split@j$P (replicate$g ?x))", "(replicate$g (split@j-1$P ?x)), j >= 1",
             [](const EGraph&, const Subst& m) { return m.axis[0] >= 1; },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               out.push_back(tg.op(TOp::Replicate, {tg.op(TOp::SplitPart, {m.var[0]}, m.axis[0] - 1, m.payload[0])}, 0, m.payload[1]));
             });
  t.computed("concat-partition", "(concat@j (partition@a$g ?x) (partition@a$g ?y))", "(partition@a$g (concat@j-1 ?x ?y)), j >= 1, j-1 != a",
             [=, &tg](const EGraph&, const Subst& m) {
               return m.axis[0] >= 1 && m.axis[0] - 1 != m.axis[1] && same_rank(m.var[0], m.var[1]) &&
                      tg.dim_at(m.var[0], m.axis[1]) == tg.dim_at(m.var[1], m.axis[1]);
             },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               out.push_back(tg.op(TOp::Partition, {tg.op(TOp::Concat, {m.var[0], m.var[1]}, m.axis[0] - 1)}, m.axis[1], m.payload[0]));
             });
  t.computed("concat-replicate", "(concat@j (replicate$g ?x) (replicate$g ?y))", "(replicate$g (concat@j-1 ?x ?y)), j >= 1",
             [=](const EGraph&, const Subst& m) { return m.axis[0] >= 1 && same_rank(m.var[0], m.var[1]); },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               out.push_back(tg.op(TOp::Replicate, {tg.op(TOp::Concat, {m.var[0], m.var[1]}, m.axis[0] - 1)}, 0, m.payload[0]));
             });
  // Summing block partial sums over the grid is the whole sum; a replicated factor is constant
  // along the grid axis.
  t.rule("reduce-partition-sum", "(reduce (sum@a+1 (partition@a$g ?x)))", "(sum@a ?x)");
  t.rule("reduce-replicate-factor", "(reduce (mul (replicate$g ?x) ?y))", "(mul ?x (reduce ?y))",
         [=](const EGraph&, const Subst& m) { return rank(m.var[0]) + 1 == rank(m.var[1]); });
  t.lifting = false;
  // Besides the lifts, a grid's proof needs matmul as the sum it lifts through and back, and the
  // order of a commutative op's operands (a family writes `eps + x` for the program's `x + eps`).
  t.lifts_grid({"combine-partition", "matmul-contract", "contract-matmul", "add-comm", "mul-comm"});
  for (TOp u : kUnary) t.lifts_grid({"replicate-" + s(u)});
  for (TOp b : kBinary) t.lifts_grid({"replicate-" + s(b)});

  // ---- exact only over the reals (docs/design.md, "Numerics") ---------------------------------
  // In floats one side overflows, cancels or turns NaN where the other does not, on inputs a
  // model has: exp(a) * exp(b) overflows where exp(a + b) does not, sum(x^2) - k m^2 cancels where
  // sum((x - m)^2) does not, a/c + b/c overflows where (a + b)/c does not. The other rules are
  // exact, or change only the order of a sum or product (a rounding bounded by its terms'
  // magnitudes). A family proved through these is kept only where the search's floating-point
  // check finds it as stable as its program (search/verify.h, NumericCheck::unstable).
  t.reals_only({"mul-distribute", "mul-factor", "div-distribute", "div-factor", "div-mul-swap", "mul-div-swap", "div-div",
                "div-mul-denominator", "exp-add", "exp-mul", "log-exp", "exp-sub-chain", "sum-centred-square"});
  return std::move(t.rules);
}

namespace {
// The ops a pattern's text names: "(mul ?a (sum@i ?b))" names mul and sum.
std::set<Op> named_ops(const std::string& text) {
  std::set<Op> ops;
  for (size_t i = text.find('('); i != std::string::npos; i = text.find('(', i + 1)) {
    size_t j = i + 1;
    while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
    if (auto op = op_from_name(text.substr(i + 1, j - i - 1))) ops.insert(*op);
  }
  return ops;
}
}  // namespace

const std::vector<Op>& ops_axioms_introduce() {
  static const std::vector<Op> ops = [] {
    TensorGraph tg;
    std::set<Op> out;
    for (const Rewrite& rule : tensor_axioms(tg)) {
      const std::set<Op> left = named_ops(rule.lhs.text());
      for (Op op : named_ops(rule.rhs))
        if (!left.count(op)) out.insert(op);
    }
    return std::vector<Op>(out.begin(), out.end());
  }();
  return ops;
}

bool proof_only(const Rewrite& rule) { return rule.name == "sum-centred-square"; }

}  // namespace prism::eg
