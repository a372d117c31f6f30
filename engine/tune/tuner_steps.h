// The steps of the tuner (tuner.cpp), each tested on its own: binding checks, seeded inputs,
// ranking every instantiation by the cost model, choosing the top K, the time limit, the numeric
// check, timing.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/runner/runner.h"
#include "engine/cancel.h"
#include "engine/interp/tensor.h"
#include "engine/ir/program.h"
#include "engine/sgraph/instantiate.h"
#include "engine/tune/compare.h"
#include "engine/tune/roofline.h"
#include "engine/backend/target.h"
#include "engine/tune/tuner.h"

namespace prism::tune::steps {

// What every instantiation of one family shares, kept once however many there are.
struct RankedFamily {
  sgraph::SGraph graph;                          // as the backend stores it
  sgraph::Analysis analysis;                     // analyze(graph)
  DimBindings dims;                              // the tensor dims
  std::vector<sgraph::SGraph::Parameter> roles;  // graph.parameter_roles()
};
std::shared_ptr<const RankedFamily> ranked_family(sgraph::SGraph graph, const DimBindings& dims);

// One instantiation of one family, with its cost, and the schedule it is timed with.
struct Option {
  size_t family = 0;
  std::shared_ptr<const RankedFamily> shared;
  DimBindings sizes;  // the grid sizes and loop ranges
  double predicted_s = 0;
  int rank = 0;                // 1-based, among every instantiation by cost
  bool spilled = false;        // its tiles are past the target's tile budget, within its spill budget
  backend::Schedule schedule;  // the backend's (empty: its default)
  // The instance these sizes make of the family (a copy of its graph: made for the few built).
  sgraph::Instance instance() const;
};

// Throws Error{InvalidArgument} for a missing, non-positive or unknown dim.
void check_bindings(const Program& lowered, const DimBindings& bindings);
// Every valid instantiation of every family, cheapest first by the cost model (those within the
// tile budget, then the spilled ones).
std::vector<Option> rank_options(const std::vector<sgraph::SGraph>& graphs, const DimBindings& dims, const backend::TargetDescription& target,
                                 const CancelToken* cancel);
// The top K by cost (in rank order), at most half of them (rounded up) from one family and, while
// other tile sizes are left, at most a quarter with the same tile sizes; spilled options only
// where none fits the budget, else (K >= 2) the cheapest of them in the last slot.
std::vector<size_t> choose(const std::vector<Option>& ranked, int top);
// What is timed: each chosen option at the first of `schedules` (the backend's default), then the
// first `explored` chosen ones at each other schedule (docs/tuning.md, "Schedules"), each a
// schedule that leaves the target as it is. The cost model does not price such a schedule (its
// threads alone): the device measures it.
constexpr int kScheduleExplored = 2;
std::vector<Option> timed_options(const std::vector<Option>& ranked, const std::vector<size_t>& chosen,
                                  const std::vector<backend::Schedule>& schedules, int explored = kScheduleExplored);
// A schedule that changes what a block may hold is timed on instantiations of its own: every
// instantiation ranked again on `scheduled` (Backend::scheduled_target), and the first `explored`
// that choose() takes of them, at `schedule`, each with its rank and estimate there.
std::vector<Option> scheduled_options(const std::vector<sgraph::SGraph>& graphs, const DimBindings& dims,
                                      const backend::TargetDescription& scheduled, const backend::Schedule& schedule,
                                      const CancelToken* cancel, int explored = kScheduleExplored);
// The roofline of `stored` (the program at the backend's storage dtypes) at `dims` on `target`,
// the peak being that of the instructions its matmuls run on (roofline_peak_gflops).
Roofline stored_roofline(const Program& stored, const DimBindings& dims, const backend::TargetDescription& target);
// The options `claimed` names (TuneRequest::claimed): each row whose family (by hash, among
// `families`, in the order `ranked` numbers them) and sizes are one of `ranked`'s, with its
// schedule when the backend offers it (else the default), in the rows' order, each once. Rows
// that match nothing are left out: a claim of sizes that do not divide or do not fit is no
// instantiation here.
std::vector<Option> claimed_options(const std::vector<Option>& ranked, const std::vector<Candidate>& families,
                                    const std::vector<TuneRow>& claimed, const std::vector<backend::Schedule>& schedules);
// The program's result on seeded random inputs in [-1, 1], or where it overflows there (inf or
// NaN) on the first of [-1/4, 1/4], [-1/16, 1/16], [-1/64, 1/64] where it does not: `inputs` and
// `named` are those inputs, result.input_range and input_note say which and why. Throws
// Error{InvalidArgument} saying what to change when it overflows on all of them.
std::vector<Tensor> finite_reference(const Program& program, const DimBindings& dims, uint64_t seed, const CancelToken* cancel,
                                     std::vector<Tensor>& inputs, std::map<std::string, Tensor>& named, TuneResult& result);
// PRISM_KERNEL_TIMEOUT (seconds), else `fallback`.
double kernel_timeout_s(double fallback);
// Each output against the reference at the backend's tolerance for its dtype; a 16-bit output
// that misses it gets compare_no_worse against `exact()` (the program at f32 storage on the same
// inputs, computed when first asked for).
Comparison check_outputs(const backend::Backend& backend, const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                         const std::vector<DType>& dtypes, const std::function<const std::vector<Tensor>&()>& exact);
// Fills `row` from a worker's run: the run's error, or the numeric check's verdict on its outputs
// ("wrong result: …") and the median time.
void record_run(TuneRow& row, const backend::RunOutcome& outcome,
                const std::function<Comparison(const std::vector<Tensor>&)>& check);
// Checks the eager baseline (item 0) and then each timed option (item i + 1) with `check_item`,
// reporting "checking" progress, and fills the result's baseline and rows (in that order; their
// times are a first, single call's).
void check_items(TuneResult& result, const std::vector<Option>& timed, const std::vector<Candidate>& families, const std::function<void(size_t item, TuneRow& row)>& check_item,
                 const std::function<void(const std::string& phase, int done, int total)>& report);
// After check_items: times the baseline and the rows that passed in interleaved rounds
// (`time_item(i)`: one round of check item i), reporting "timing" progress, and sets their
// medians, spreads, noisy flags and failures, and the result's `measured` (but `at`, the tuner's
// revision and the seed).
Measurement time_rounds(TuneResult& result, const TimingPolicy& policy, const std::function<RoundTime(size_t item)>& time_item,
                        const LoadWatch& watch_load, const std::function<void(const std::string& phase, int done, int total)>& report);
// The current time in UTC, "2026-11-24T11:50:02Z".
std::string utc_now();
// Sorts the rows (ok by time, then failures by cost rank) and fills best, speedup, roofline
// fraction and the rank correlation.
void finish(TuneResult& result);

}  // namespace prism::tune::steps
