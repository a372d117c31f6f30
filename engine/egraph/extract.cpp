#include "engine/egraph/extract.h"

#include <limits>

namespace prism::eg {

Extractor::Extractor(const EGraph& g, NodeCost cost) : g_(g) {
  constexpr uint64_t kInf = std::numeric_limits<uint64_t>::max();
  cost_.assign(g.num_ids(), kInf);
  best_.resize(g.num_ids());
  const std::vector<Id> roots = g.roots();
  for (bool changed = true; changed;) {
    changed = false;
    for (Id c : roots) {
      for (const auto& m : g.members(c)) {
        uint64_t total = cost(m.node);
        for (int i = 0; i < m.node.arity && total != kInf; ++i) {
          uint64_t k = cost_[g.find(m.node.child[i])];
          total = k == kInf || total > kInf - k ? kInf : total + k;
        }
        if (total < cost_[c]) {
          cost_[c] = total;
          best_[c] = g.canonical(m.node);
          changed = true;
        }
      }
    }
  }
}

}  // namespace prism::eg
