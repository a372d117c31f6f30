// A cost model that ranks instances of an sGraph family without running them (docs/design.md §5).
// The assumptions are listed at the top of cost_model.cpp.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/sgraph/instantiate.h"
#include "engine/backend/target.h"

namespace prism::tune {

struct CostEstimate {
  double seconds = 0;        // the estimate used for ranking
  double memory_bytes = 0;   // bytes from DRAM: each device tensor element read the first time, written once
  double cache_bytes = 0;    // bytes re-read by blocks that share a tile (served by L2/L3)
  double scratch_bytes = 0;  // CPU: computed tiles' writes and reads that L1 does not hold (served by L2)
  double flops = 0;
  int kernels = 0;
  int64_t blocks = 0;        // total grid points over all custom kernels
  double parallel_efficiency = 1;  // blocks spread over cores: blocks / (ceil(blocks/cores) * cores), the worst kernel's
  std::string bound;         // "memory", "cache", "compute", "overhead": the largest part of `seconds`
  std::vector<double> kernel_seconds;  // each kernel's part of `seconds`, in launch order (they sum to it)
};

// Tensors count at the dtypes the instance declares: a backend's stored family (the CPU's all f32).
// Throws Error{InvalidArgument} when the instance's bindings leave a tile size unbound (an
// instance from instantiate() never does).
CostEstimate estimate_cost(const sgraph::Instance& instance, const backend::TargetDescription& target);

// The kernels' costs of one family's instantiations, kept between estimates: a kernel's cost
// depends only on the parameters its own grid, loop, tiles and tensors name, so ranking a family
// (tune::rank_options) prices each kernel once per tiling of its own, not once per instantiation
// of the whole family. One memo serves one family's graph and analysis at one set of tensor dims
// on one target.
class CostMemo {
 public:
  CostMemo();
  ~CostMemo();
  CostMemo(const CostMemo&) = delete;
  CostMemo& operator=(const CostMemo&) = delete;
  struct Kernels;
  std::unique_ptr<Kernels> kernels;
};
// The same estimate as above, each kernel's cost taken from `memo` where it holds it.
CostEstimate estimate_cost(const sgraph::Instance& instance, const backend::TargetDescription& target, CostMemo& memo);

}  // namespace prism::tune
