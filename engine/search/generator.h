// The generator: a depth-first enumeration of fused computations (dag.h) in a canonical op order.
//
// Canonical order: each op has a key (position of its last operand, op code, axis, operands) and
// a sequence is generated only when the keys strictly increase. Taking, at every step, the ready
// op with the smallest key is the only such order of a DAG (an op that becomes ready later reads
// the op just placed, so its key is larger), so every set of ops is generated exactly once and
// no two orders of it are. Commutative ops take their operands in index order.
//
// Every step is pruned, the reason counted:
//   dims        operand dims must agree provably (equal Dims or a size-1 broadcast; equal ranks);
//               a reduction over a size-1 axis does nothing. What fails is no program at all.
//   structure   a finished DAG has one sink; an op with no reader can only be revived by a later
//               op, and an op revives at most one net, so more dead ops than the remaining budget
//               plus one can never finish.
//   expression  (when pruning) the op's term must be in the program's saturated e-graph
//               (expression.h); a finished DAG's sink must be in the program's root class.
// Without expression pruning a DAG finishes when its sink has the program's output shape; the
// caller then checks it numerically.
#pragma once
#include <atomic>
#include <functional>

#include "engine/search/dag.h"
#include "engine/search/expression.h"

namespace prism::search {

struct GenCounters {
  std::atomic<uint64_t> generated{0}, pruned_expression{0}, pruned_dims{0}, pruned_structure{0};
};

class Generator {
 public:
  // `expressions` null: no expression pruning. `program` gives the output shape and the ops the
  // enumeration tries (docs/search.md, "The enumeration's ops"); `leaves` the DAGs' leaves
  // (dag_leaves, with which `expressions` was made).
  Generator(const Program& program, const std::vector<DagValue>& leaves, const ProgramExpressions* expressions, int max_ops,
            GenCounters& counters);

  // Runs the enumeration; `emit` gets every finished DAG (from any worker thread when `spawn`
  // runs subtrees in parallel). `stop` is polled at every expansion; when it returns true the
  // enumeration unwinds. `spawn(f)` runs f, possibly as a parallel task; subtrees up to
  // `spawn_depth` ops are handed to it.
  void run(const std::function<void(const Dag&)>& emit, const std::function<bool()>& stop,
           const std::function<void(std::function<void()>)>& spawn, int spawn_depth = 2) const;

 private:
  struct State;
  void expand(State& s, const std::function<void(const Dag&)>& emit, const std::function<bool()>& stop,
              const std::function<void(std::function<void()>)>& spawn, int spawn_depth) const;
  bool finished(const State& s) const;

  Dag base_;
  std::vector<Dim> out_shape_;
  std::vector<Op> unary_, binary_;  // the elementwise ops tried
  const ProgramExpressions* expr_;
  int max_ops_;
  GenCounters& counters_;
};

}  // namespace prism::search
