// A rewrite rule: a name, a left-hand pattern, an optional guard (a side condition on the match,
// typically on the e-class analysis) and an applier that adds the right-hand side(s). Most rules
// give the right-hand side as a pattern; a few compute it (new axes, a choice of split factors).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/egraph/pattern.h"

namespace prism::eg {

struct Rewrite {
  using Guard = std::function<bool(const EGraph&, const Subst&)>;
  using Applier = std::function<void(EGraph&, const Subst&, std::vector<Id>& out)>;

  std::string name;
  Pattern lhs;
  Guard guard;      // empty: always applies
  Applier apply;    // appends the ids to join with the matched class
  std::string rhs;  // the right-hand side as text, for the table and messages
  // Exact only over the reals: in floats one side may overflow, cancel or turn NaN where the
  // other does not (exp(a + b) = exp(a) * exp(b)). A proof through it says nothing of floats
  // (docs/design.md, "Numerics").
  bool reals_only = false;
  // Moves a grid (partition, replicate, combine) outward past an op, or is one of the few rules
  // such a move needs (matmul as a contraction, operand order). A proof of a family tries these
  // alone first (ResidentEGraph::prove; docs/search.md, "Proofs: the grid first").
  bool lifts_grid = false;

  // lhs => rhs with both sides as patterns.
  static Rewrite make(const std::string& name, const std::string& lhs, const std::string& rhs, const OpResolver& ops, Guard guard = {}) {
    Rewrite r;
    r.name = name;
    r.lhs = Pattern(lhs, ops);
    auto right = std::make_shared<Pattern>(rhs, ops);
    right->bind_names(r.lhs);
    r.guard = std::move(guard);
    r.apply = [right](EGraph& g, const Subst& s, std::vector<Id>& out) { out.push_back(right->instantiate(g, s)); };
    r.rhs = rhs;
    return r;
  }
};

}  // namespace prism::eg
