// The steps of the tuner (tuner.cpp), each tested on its own: binding checks, seeded inputs,
// ranking every instantiation by the cost model, choosing the top K, the time limit, the numeric
// check, timing.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/runner/runner.h"
#include "engine/cancel.h"
#include "engine/interp/tensor.h"
#include "engine/ir/program.h"
#include "engine/sgraph/instantiate.h"
#include "engine/tune/compare.h"
#include "engine/backend/target.h"
#include "engine/tune/tuner.h"

namespace prism::tune::steps {

// One instantiation of one family, with its cost.
struct Option {
  size_t family = 0;
  sgraph::Instance instance;
  DimBindings sizes;
  double predicted_s = 0;
};

// Throws Error{InvalidArgument} for a missing, non-positive or unknown dim.
void check_bindings(const Program& lowered, const DimBindings& bindings);
// Every valid instantiation of every family, cheapest first by the cost model.
std::vector<Option> rank_options(const std::vector<sgraph::SGraph>& graphs, const DimBindings& dims, const backend::TargetDescription& target,
                                 const CancelToken* cancel);
// The top K by cost (in rank order), at most half of them (rounded up) from one family and, while
// other tile sizes are left, at most a quarter with the same tile sizes.
std::vector<size_t> choose(const std::vector<Option>& ranked, int top);
// PRISM_KERNEL_TIMEOUT (seconds), else `fallback`.
double kernel_timeout_s(double fallback);
// Each output against the reference at the backend's tolerance for its dtype.
Comparison check_outputs(const backend::Backend& backend, const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                         const std::vector<DType>& dtypes);
// Fills `row` from a worker's run: the run's error, or the numeric check's verdict on its outputs
// ("wrong result: …") and the median time.
void record_run(TuneRow& row, const backend::RunOutcome& outcome,
                const std::function<Comparison(const std::vector<Tensor>&)>& check);
// Times the eager baseline (item 0) and then each chosen instantiation (item i + 1) with
// `time_item`, reporting "timing" progress, and fills the result's baseline and rows.
void time_items(TuneResult& result, const std::vector<Option>& ranked, const std::vector<size_t>& chosen,
                const std::vector<Candidate>& families, const std::function<void(size_t item, TuneRow& row)>& time_item,
                const std::function<void(const std::string& phase, int done, int total)>& report);
// Sorts the rows (ok by time, then failures by cost rank) and fills best, speedup, roofline
// fraction and the rank correlation.
void finish(TuneResult& result);

}  // namespace prism::tune::steps
