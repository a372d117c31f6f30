// Extraction by cost: the cheapest term of every e-class under a tree cost (a node's cost plus
// its children's), memoized per class and computed to a fixpoint (cycles never win).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/egraph/egraph.h"

namespace prism::eg {

class Extractor {
 public:
  using NodeCost = std::function<uint64_t(const ENode&)>;
  explicit Extractor(const EGraph& g, NodeCost cost = [](const ENode&) { return uint64_t(1); });

  uint64_t cost(Id id) const { return cost_[g_.find(id)]; }
  // The chosen node of a class (children are class ids): a node source for printing/to_program.
  const ENode& best(Id id) const { return best_[g_.find(id)]; }

 private:
  const EGraph& g_;
  std::vector<uint64_t> cost_;
  std::vector<ENode> best_;
};

}  // namespace prism::eg
