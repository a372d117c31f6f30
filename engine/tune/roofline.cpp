#include "engine/tune/roofline.h"

#include <algorithm>
#include <set>

#include "engine/ir/shape.h"
#include "engine/tune/backends.h"

namespace prism::tune {

double value_flops(const Program& lowered, const Value& v, const DimBindings& bindings) {
  if (v.operands.empty()) return 0;
  return op_flops(v.op, concrete_shape(v.type.shape, bindings), concrete_shape(lowered.value(v.operands[0]).type.shape, bindings));
}

// The measured read curve is a sweep's, under the hardware's replacement: a set just past the
// caches' capacity then finds almost nothing there. A kernel that reads its set in another order
// keeps more of it between calls (docs/tuning.md, "The flow of one `tune`", step 1). The caches can hold at
// most their capacity of the set, so no kernel reads it faster than that part at the caches' rate
// and the rest at memory's.
double bound_bandwidth_gbs(const backend::TargetDescription& target, double bytes) {
  const double curve = target.bandwidth_for(bytes), capacity = target.cache_capacity();
  if (target.cache_bandwidth_gbs <= 0 || target.bandwidth_gbs <= 0 || capacity <= 0 || bytes <= 0) return curve;
  const double kept = std::min(1.0, capacity / bytes);
  return std::max(curve, 1.0 / (kept / target.cache_bandwidth_gbs + (1 - kept) / target.bandwidth_gbs));
}

double roofline_peak_gflops(const backend::TargetDescription& target, DType storage) {
  return backend_for(target.target).cost_rules().peak_gflops(storage, target);
}

Roofline program_roofline(const Program& lowered, const DimBindings& bindings, const backend::TargetDescription& target) {
  Roofline r;
  auto bytes = [&](int id) {
    const Value& v = lowered.value(id);
    return double(element_count(concrete_shape(v.type.shape, bindings))) * double(dtype_bytes(v.type.dtype));
  };
  std::set<int> seen;  // a value returned twice is written twice; an input read once
  for (int id : lowered.inputs)
    if (seen.insert(id).second) r.compulsory_bytes += bytes(id);
  for (int id : lowered.outputs) r.compulsory_bytes += bytes(id);
  for (const Value& v : lowered.values) r.flops += value_flops(lowered, v, bindings);
  r.bandwidth_gbs = bound_bandwidth_gbs(target, r.compulsory_bytes);
  r.level = target.cache_hit_fraction(r.compulsory_bytes) >= 0.5 ? "cache" : "memory";
  r.memory_s = r.bandwidth_gbs > 0 ? r.compulsory_bytes / (r.bandwidth_gbs * 1e9) : 0;
  r.peak_gflops = target.peak_gflops;
  r.compute_s = target.peak_gflops > 0 ? r.flops / (target.peak_gflops * 1e9) : 0;
  r.seconds = std::max(r.memory_s, r.compute_s);
  r.bound = r.compute_s > r.memory_s ? "compute" : "memory";
  return r;
}

}  // namespace prism::tune
