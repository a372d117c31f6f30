// The roofline of a program at concrete dims on a target: the time no implementation can beat,
// from the bytes it must move (every input read once, every output written once) and the flops it
// must do, at the target's peak bandwidth and peak flops. The bandwidth is that of where the
// compulsory bytes live between calls (bound_bandwidth_gbs): a kernel timed again and
// again on a working set that fits in the caches reads it from there, one near their size partly.
#pragma once
#include <string>

#include "engine/ir/program.h"
#include "engine/backend/target.h"

namespace prism::tune {

struct Roofline {
  double compulsory_bytes = 0;  // every input read once + every output written once, at the storage dtype
  double flops = 0;             // matmul 2*m*n*k (batched), elementwise/reduction 1 per element visited (transcendentals count 1)
  double memory_s = 0, compute_s = 0;
  double bandwidth_gbs = 0;     // the bandwidth memory_s assumes (bound_bandwidth_gbs)
  double peak_gflops = 0;       // the peak compute_s assumes (the target's)
  std::string level;            // where most of the working set lives between calls: "memory" or "cache"
  double seconds = 0;           // max(memory_s, compute_s)
  std::string bound;            // "memory" or "compute"
};

// Flops of one value of a lowered program at concrete bindings: matmul 2*m*n*k per batch element,
// unary and binary ops one per output element, reductions one per input element, data movement
// and constants none. Shared with the cost model.
double value_flops(const Program& lowered, const Value& v, const DimBindings& bindings);

// The read bandwidth no kernel beats on a working set of `bytes` read again and again: the
// measured curve (TargetDescription::bandwidth_for), or where it is higher, the caches' rate for
// the part of the set they can hold (all of it up to their capacity) and memory's for the rest.
double bound_bandwidth_gbs(const backend::TargetDescription& target, double bytes);

// The flop rate the roofline of a program stored at `storage` counts on `target`: that of the
// instructions its matmuls run on there, as the target's backend says (CostRules::peak_gflops).
double roofline_peak_gflops(const backend::TargetDescription& target, DType storage);

// `lowered`: primitives only (lower_composites), as a backend stores it: each input and output is
// counted at its own dtype's bytes (a bf16 weight at 2). Throws Error{InvalidArgument} for a dim
// the bindings do not make a positive integer.
Roofline program_roofline(const Program& lowered, const DimBindings& bindings, const backend::TargetDescription& target);

}  // namespace prism::tune
