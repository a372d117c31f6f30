// Parallel structure: partition, replicate and combine, and lifting a grid outward (axiom_table.h; the conventions and guards: axioms.cpp).
#include "engine/egraph/axiom_table.h"

namespace prism::eg::axiom {

namespace {

// Ops on tiles lifted to the tiles of the op on whole tensors.
void lifted_ops(Table& t) {
  TensorGraph& tg = t.tg;
  const Shapes sh{&tg};
  for (TOp u : kUnary) t.rule(s(u) + "-partition", "(" + head(u) + " (partition@a$g ?x))", "(partition@a$g (" + head(u) + " ?x))");
  for (TOp b : kBinary) {
    // Both sides cut the same axis of equal size: block k combines the k-th tiles of both.
    t.rule(s(b) + "-partition", "(" + s(b) + " (partition@a$g ?x) (partition@a$g ?y))", "(partition@a$g (" + s(b) + " ?x ?y))",
           [=, &tg](const EGraph&, const Subst& m) { return sh.same_rank(m.var[0], m.var[1]) && tg.dim_at(m.var[0], m.axis[0]) == tg.dim_at(m.var[1], m.axis[0]); });
    // A replicated operand must have size 1 on the cut axis (it broadcasts along it): then every
    // block sees all of it. One of size d/g would be the same tile for every block: not lifted.
    t.rule(s(b) + "-replicate-partition", "(" + s(b) + " (replicate$g ?x) (partition@a$g ?y))", "(partition@a$g (" + s(b) + " ?x ?y))",
           [=](const EGraph&, const Subst& m) { return sh.same_rank(m.var[0], m.var[1]) && sh.one(m.var[0], m.axis[0]); });
    t.rule(s(b) + "-partition-replicate", "(" + s(b) + " (partition@a$g ?x) (replicate$g ?y))", "(partition@a$g (" + s(b) + " ?x ?y))",
           [=](const EGraph&, const Subst& m) { return sh.same_rank(m.var[0], m.var[1]) && sh.one(m.var[1], m.axis[0]); });
    // A scalar (rank 0) is the same in every block.
    t.past_scalar(s(b), "partition@a$g", "partition");
    t.past_scalar(s(b), "replicate$g", "replicate");
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
}

// Layout ops, split parts and concats on tiles lifted likewise; the sum over the grid.
void lifted_layouts(Table& t) {
  TensorGraph& tg = t.tg;
  const Shapes sh{&tg};
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
               return m.axis[0] >= 1 && m.axis[0] - 1 != m.axis[1] && sh.same_rank(m.var[0], m.var[1]) &&
                      tg.dim_at(m.var[0], m.axis[1]) == tg.dim_at(m.var[1], m.axis[1]);
             },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               out.push_back(tg.op(TOp::Partition, {tg.op(TOp::Concat, {m.var[0], m.var[1]}, m.axis[0] - 1)}, m.axis[1], m.payload[0]));
             });
  t.computed("concat-replicate", "(concat@j (replicate$g ?x) (replicate$g ?y))", "(replicate$g (concat@j-1 ?x ?y)), j >= 1",
             [=](const EGraph&, const Subst& m) { return m.axis[0] >= 1 && sh.same_rank(m.var[0], m.var[1]); },
             [&tg](const Pattern&, EGraph&, const Subst& m, std::vector<Id>& out) {
               out.push_back(tg.op(TOp::Replicate, {tg.op(TOp::Concat, {m.var[0], m.var[1]}, m.axis[0] - 1)}, 0, m.payload[0]));
             });
  // Summing block partial sums over the grid is the whole sum; a replicated factor is constant
  // along the grid axis.
  t.rule("reduce-partition-sum", "(reduce (sum@a+1 (partition@a$g ?x)))", "(sum@a ?x)");
  t.rule("reduce-replicate-factor", "(reduce (mul (replicate$g ?x) ?y))", "(mul ?x (reduce ?y))",
         [=](const EGraph&, const Subst& m) { return sh.rank(m.var[0]) + 1 == sh.rank(m.var[1]); });
}

}  // namespace

void grid(Table& t) {
  TensorGraph& tg = t.tg;
  const Shapes sh{&tg};
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
           [=, &tg](const EGraph&, const Subst& m) { return sh.same_rank(m.var[0], m.var[1]) && tg.dim_at(m.var[0], m.axis[0]) == tg.dim_at(m.var[1], m.axis[0]); });
    t.rule("replicate-" + s(b), "(" + s(b) + " (replicate$g ?x) (replicate$g ?y))", "(replicate$g (" + s(b) + " ?x ?y))",
           [=](const EGraph&, const Subst& m) { return sh.same_rank(m.var[0], m.var[1]); });
  }
  // Lifting the grid outward (a block body on tiles -> the tiles of the whole body). A tile's axis
  // j >= 1 is axis j-1 of the tensor it was cut from (the grid axis is 0), so every lifted op
  // shifts its axis by one; an op on the grid axis itself (j = 0) is never lifted.
  t.lifting = true;
  lifted_ops(t);
  lifted_layouts(t);
  t.lifting = false;
  // Besides the lifts, a grid's proof needs matmul as the sum it lifts through and back, and the
  // order of a commutative op's operands (a family writes `eps + x` for the program's `x + eps`).
  t.lifts_grid({"combine-partition", "matmul-contract", "contract-matmul", "add-comm", "mul-comm"});
  for (TOp u : kUnary) t.lifts_grid({"replicate-" + s(u)});
  for (TOp b : kBinary) t.lifts_grid({"replicate-" + s(b)});
}

}  // namespace prism::eg::axiom
