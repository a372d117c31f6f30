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

#include <cctype>
#include <set>
#include <string>

#include "engine/egraph/axiom_table.h"

namespace prism::eg {

std::vector<Rewrite> tensor_axioms(TensorGraph& tg) {
  axiom::Table t{tg, {}};
  axiom::arithmetic(t);
  axiom::layout(t);
  axiom::reductions(t);
  axiom::grid(t);

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
