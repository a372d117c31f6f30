// The tuner's check on the edge suite (edge_suite.h; docs/tuning.md, "The edge suite"), after
// the check on the seeded inputs: each set's inputs are handed to the kernel runner once, then
// the eager baseline and every row that has passed so far run once on them (no timing), each
// output compared with the set's reference where that is finite (compare.h's
// mask_non_finite_reference, then the backend's tolerance, scaled by the output's magnitude).
// A row that fails a set is rejected with the set's name and why: "wrong result on causal -inf
// mask (M): output 0 has 2048 NaN where the reference is finite (first at (0, 0, 5))". The
// baseline failing a set is a note (TuneResult::edge_notes), not a rejection of every row: the
// reference interpreter is the judge, but on a floating-point edge the baseline misses, a row is
// held to no_worse_than_eager.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/cancel.h"
#include "engine/tune/compare.h"
#include "engine/tune/edge_suite.h"
#include "engine/tune/tuner.h"

namespace prism::tune {

struct EdgeContext {
  const backend::Backend& backend;
  const Program& program;  // as the reference runs it (the backend's storage)
  const DimBindings& dims;
  std::vector<DType> checked_dtypes;  // the dtype each output is held to (engine/ir/checked_dtypes.h)
  std::function<void(const std::vector<Tensor>& inputs)> set_inputs;  // the runner's inputs, in parameter order
  std::function<backend::RunOutcome(size_t item)> run;                // item 0 the baseline, i + 1 row i (check order)
};

// The program at f32 on a set (`exact`), and with its values moved as rounding them differently
// may move them (`moved`, interpreter.h's interpret_moved and rounding_steps; empty where a set
// gives no second chance): each computed when first asked for.
struct SetReferences {
  std::function<const std::vector<Tensor>&()> exact, moved;
};

// The program at f32 on a set and on it moved, each computed when first asked for: on a
// conditioned set every value moved by a sum's rounding in another order and each 16-bit value
// by its dtype's, elsewhere (a floating-point edge, the seeded inputs) only the 16-bit values,
// and none for an all-f32 program (no moved reference: no second chance). `program` as the
// reference runs it; it, `dims` and `set` must outlive the cache.
class SetReferenceCache {
 public:
  SetReferenceCache(const Program& program, const DimBindings& dims, const InputSet& set, const CancelToken* cancel);
  SetReferences references();

 private:
  const std::vector<Tensor>& exact();
  const std::vector<Tensor>& moved();

  const DimBindings& dims_;
  const InputSet& set_;
  const CancelToken* cancel_;
  const Program wide_;
  const std::vector<float> steps_;
  std::optional<std::vector<Tensor>> exact_, moved_;
};

// `got` on `set` against its reference where it is finite, at the backend's tolerance; a 16-bit
// output that misses it gets compare_no_worse against the exact result, and an output that
// misses both compare_conditioned (what moving its values moves the exact result by) where
// `references.moved` is given.
Comparison compare_on_set(const backend::Backend& backend, std::vector<Tensor> got, const InputSet& set, const std::vector<DType>& dtypes,
                          const SetReferences& references);

// The floating-point edges' allowance where the eager baseline (the program run op by op, as
// PyTorch runs it) misses a set too: its own f32 rounding is past the tolerance there, and `got`
// passes where, output by output, its largest error against the set's reference (where that is
// finite, over its magnitude there) is at most twice `eager`'s, which must be finite there
// (docs/tuning.md, "The edge suite").
bool no_worse_than_eager(const std::vector<Tensor>& got, const std::vector<Tensor>& eager, const InputSet& set);

// Runs the baseline (when it passed) and the rows that passed on every set, rejecting rows and
// noting baseline failures; sets result.edge_sets and result.edge_notes. Reports "edge cases"
// progress per set.
void check_edge_sets(TuneResult& result, const std::vector<MakeInputSet>& sets, const EdgeContext& context, const CancelToken* cancel,
                     const std::function<void(const std::string& phase, int done, int total)>& report);

}  // namespace prism::tune
