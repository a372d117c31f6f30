// The steps the CPU and CUDA tuners share (tuner.cpp, tuner_cuda.cpp): binding checks, seeded
// inputs, ranking every instantiation by the cost model, choosing the top K, the time limit.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/cancel.h"
#include "engine/interp/tensor.h"
#include "engine/ir/program.h"
#include "engine/sgraph/instantiate.h"
#include "engine/tune/target.h"
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
// The program's inputs, seeded random at their declared dtypes, in parameter order and by name.
std::vector<Tensor> random_inputs(const Program& program, const DimBindings& dims, uint64_t seed, std::map<std::string, Tensor>* by_name);
// Every valid instantiation of every family, cheapest first by the cost model.
std::vector<Option> rank_options(const std::vector<sgraph::SGraph>& graphs, const DimBindings& dims, const TargetDescription& target,
                                 const CancelToken* cancel);
// The top K by cost, at most half of them (rounded up) from one family.
std::vector<size_t> choose(const std::vector<Option>& ranked, int top);
// PRISM_KERNEL_TIMEOUT (seconds), else `fallback`.
double kernel_timeout_s(double fallback);
// Sorts the rows (ok by time, then failures by cost rank) and fills best, speedup, roofline
// fraction and the rank correlation.
void finish(TuneResult& result);

}  // namespace prism::tune::steps
