#include "engine/search/expression.h"

#include <deque>

#include "engine/egraph/from_program.h"
#include "engine/error.h"

namespace prism::search {

ProgramExpressions::ProgramExpressions(const Program& program, const std::vector<DagValue>& leaves, const SaturationLimits& limits,
                                       const CancelToken* cancel)
    : tg_(std::make_unique<eg::TensorGraph>()) {
  rules_ = eg::tensor_axioms(*tg_);
  std::erase_if(rules_, eg::proof_only);
  eg::AddedTerms added = eg::add_program(*tg_, program);
  root_ = added.outputs.at(0);
  // The program's term already holds each leaf's term (from_program pads and transposes the same
  // way), so re-adding them returns its ids; they are added before saturation in any case.
  for (const DagValue& leaf : leaves) leaves_.push_back(leaf_term(*tg_, leaf));
  eg::Runner runner(&rules_);
  report_ = runner.run(tg_->graph(), eg::RunLimits{limits.node_limit, limits.iter_limit, limits.time_limit_s}, cancel);
  if (report_.stop == eg::StopReason::Cancelled) throw Error(Error::Kind::Cancelled, "cancelled");
  tg_->graph().rebuild();
  root_ = tg_->graph().find(root_);
  compute_distances();
}

void ProgramExpressions::compute_distances() {
  const eg::EGraph& g = tg_->graph();
  auto dag_op = [](uint8_t op) {
    const eg::TOp t = eg::TOp(op);
    return eg::is_unary(t) || eg::is_binary(t) || t == eg::TOp::Matmul || t == eg::TOp::Sum || t == eg::TOp::Max || t == eg::TOp::Rms;
  };
  distance_.assign(g.num_ids(), kFar);
  std::deque<eg::Id> queue{root_};
  distance_[root_] = 0;
  while (!queue.empty()) {  // breadth first from the root, down the reversed edges
    const eg::Id p = queue.front();
    queue.pop_front();
    for (const eg::EGraph::Member& m : g.members(p))
      if (dag_op(m.node.op))
        for (int k = 0; k < m.node.arity; ++k) {
          const eg::Id c = g.find(m.node.child[k]);
          if (distance_[c] > distance_[p] + 1) {
            distance_[c] = distance_[p] + 1;
            queue.push_back(c);
          }
        }
  }
}

int ProgramExpressions::distance_to_root(eg::Id cls) const {
  if (cls == eg::kNoId) return kFar;
  const eg::Id c = tg_->graph().find(cls);
  return c < distance_.size() ? distance_[c] : kFar;
}

eg::Id ProgramExpressions::lookup(const DagValue& op, const std::vector<eg::Id>& kids) const {
  eg::ENode n;
  n.op = uint8_t(eg::term_op(op.op));
  n.arity = uint8_t(kids.size());
  n.axis = int16_t(is_reduction(op.op) ? op.axis : 0);
  for (size_t i = 0; i < kids.size(); ++i) {
    if (kids[i] == eg::kNoId) return eg::kNoId;
    n.child[i] = kids[i];
  }
  return tg_->graph().lookup(n);
}

}  // namespace prism::search
