// Pruning by abstract expression (docs/design.md §3): the program's term is put in a private
// e-graph and saturated once with the sound axioms; afterwards the e-graph is read-only and shared
// by all workers. A candidate op whose term is not in it (its node, over the e-classes of its
// operands, is not hash-consed there) is not a subterm of anything the axioms make equal to the
// program within the saturation limits, so no program containing it is found equal; its whole
// subtree is dropped. The lookup is one hash probe per op.
#pragma once
#include <memory>
#include <vector>

#include "engine/cancel.h"
#include "engine/egraph/axioms.h"
#include "engine/egraph/runner.h"
#include "engine/egraph/tensor_lang.h"
#include "engine/search/dag.h"

namespace prism::search {

struct SaturationLimits {
  size_t node_limit = 60000;
  size_t iter_limit = 10;
  double time_limit_s = 2.0;
};

class ProgramExpressions {
 public:
  // `program`: the lowered program (one output); `leaves`: the DAGs' leaves (dag_leaves). Throws
  // Error{InvalidArgument} for a program the terms cannot express, Error{Cancelled}.
  ProgramExpressions(const Program& program, const std::vector<DagValue>& leaves, const SaturationLimits& limits, const CancelToken* cancel);

  eg::Id leaf(int index) const { return tg_->graph().find(leaves_.at(size_t(index))); }
  eg::Id root() const { return root_; }
  // The class of `op` over operand classes (kNoId: not in the saturated e-graph). Thread-safe.
  eg::Id lookup(const DagValue& op, const std::vector<eg::Id>& operand_classes) const;
  // The fewest ops that take a value of class `cls` into the program's root class: the length of
  // the shortest chain of e-nodes of ops a DAG has (elementwise, matmul, reductions) from `cls`
  // up to the root; kFar when there is none. A DAG op reads its operand's class and is a node of
  // its own class, so every DAG value needs at least this many more ops before the sink: a sound
  // bound the generator prunes by.
  static constexpr int kFar = 1 << 20;
  int distance_to_root(eg::Id cls) const;
  eg::StopReason stop() const { return report_.stop; }
  size_t nodes() const { return tg_->graph().num_nodes(); }

 private:
  void compute_distances();

  std::unique_ptr<eg::TensorGraph> tg_;
  std::vector<eg::Rewrite> rules_;
  std::vector<eg::Id> leaves_;
  std::vector<int> distance_;  // [class root id]
  eg::Id root_ = eg::kNoId;
  eg::RunReport report_;
};

}  // namespace prism::search
