// The static review of a CUDA candidate, without a GPU (docs/tuning.md, "Static checks"): its
// source compiled for sm_90 by NVRTC, and for each kernel its plan launches what ptxas and the
// PTX say (resources.h), beside the checks issue 65 sets for the decode kernels.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/backend/cuda/double_buffer.h"
#include "engine/backend/cuda/plan.h"
#include "engine/backend/cuda/ptx_loads.h"
#include "engine/backend/cuda/resources.h"
#include "engine/backend/kernel_ir.h"

namespace prism::backend::cuda {

struct KernelReview {
  CudaKernelInfo launch;               // its grid, threads and dynamic shared memory
  KernelResources resources;           // ptxas's counts
  Occupancy occupancy;                 // on the SM reviewed for
  std::map<int64_t, int> load_widths;  // its global loads, by bytes per instruction and thread
  // Those of them that read the plan's inputs (weights, activations, caches), and any whose
  // address derives from no one parameter; the rest read its scratch (split-k partials).
  std::map<int64_t, int> input_load_widths;
  LoadsInFlight loads;                 // a block's (add_loads_in_flight; zero until then)
};

struct StaticReview {
  std::vector<KernelReview> kernels;  // in launch order
  int library_calls = 0;              // the plan's cuBLAS calls
  int sms = 0;                        // of the SM reviewed for
  int launches() const { return int(kernels.size()) + library_calls; }
};

// Throws Error{Failed} where NVRTC is missing or the source does not compile, and where ptxas
// reports no resources for a kernel the plan launches.
StaticReview review_plan(const std::string& source, const CudaPlan& plan, const SmLimits& sm = sm90_limits());

// One check of the decode kernels' (issue 65): whether it holds, and where not, why in words.
struct StaticCheck {
  std::string name;
  bool holds = true;
  std::string why;
};
// Each custom kernel's loads in flight from the kernel IR the source was printed from (kernel k
// of `lowered` is kernel_name(k); a tail's loads are its first kernel's), with the code
// generator's pipeline plan under `options`.
void add_loads_in_flight(StaticReview& review, const kir::Program& lowered, const CudaCodegenOptions& options);

// No spills; at least `min_blocks` blocks and `min_warps` warps on an SM for every kernel; every
// global load of an input 16 bytes wide (a combining kernel's reads of split-k partials it
// computed are not the streams the roofline counts); with `one_launch`, a single launch. With `little_bytes` (a device's
// bandwidth times its loaded memory latency), also Little's law: the blocks resident at once
// (the grid, or the SMs times the blocks one holds) keep that many bytes in flight, or all a
// kernel loads where it loads less.
std::vector<StaticCheck> static_checks(const StaticReview& review, bool one_launch, int min_blocks = 2, int min_warps = 16,
                                       int64_t little_bytes = 0);

}  // namespace prism::backend::cuda
