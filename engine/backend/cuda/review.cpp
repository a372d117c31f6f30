#include "engine/backend/cuda/review.h"

#include <algorithm>

#include "engine/backend/cuda/nvrtc.h"
#include "engine/error.h"

namespace prism::backend::cuda {

StaticReview review_plan(const std::string& source, const CudaPlan& plan, const SmLimits& sm) {
  const PtxResult compiled = compile_for_review(source, "sm_90");
  const std::vector<KernelResources> reported = parse_ptxas_log(compiled.log);
  StaticReview review;
  review.sms = sm.sms;
  for (const CudaStep& step : plan.steps) {
    if (step.is_gemm) {
      ++review.library_calls;
      continue;
    }
    auto found = std::find_if(reported.begin(), reported.end(), [&](const KernelResources& k) { return k.name == step.kernel.name; });
    if (found == reported.end()) throw Error(Error::Kind::Failed, "ptxas reported no resources for kernel " + step.kernel.name);
    KernelReview k;
    k.launch = step.kernel;
    k.resources = *found;
    k.occupancy = occupancy(*found, step.kernel.grid_blocks, step.kernel.threads, step.kernel.shared_bytes, sm);
    for (const GlobalLoad& load : global_loads(compiled.ptx, step.kernel.name)) {
      ++k.load_widths[load.bytes];
      const bool scratch = load.param >= 0 && size_t(load.param) < step.kernel.params.size() &&
                           std::none_of(plan.inputs.begin(), plan.inputs.end(), [&](const CudaTensor& t) { return t.name == step.kernel.params[size_t(load.param)]; });
      if (!scratch) ++k.input_load_widths[load.bytes];
    }
    review.kernels.push_back(std::move(k));
  }
  return review;
}

void add_loads_in_flight(StaticReview& review, const kir::Program& lowered, const CudaCodegenOptions& options) {
  const kir::Program printed = printed_program(lowered, options);
  for (KernelReview& k : review.kernels)
    for (size_t i = 0; i < lowered.kernels.size(); ++i)
      if (lowered.kernels[i].custom && k.launch.name == kernel_name(i)) {
        const kir::CustomKernel& block = printed.kernels[i].block;
        k.loads = loads_in_flight(block, plan_double_buffer(block, options.shared_memory_bytes, options.pipeline_stages));
      }
}

std::vector<StaticCheck> static_checks(const StaticReview& review, bool one_launch, int min_blocks, int min_warps, int64_t little_bytes) {
  StaticCheck spills{"no spills", true, ""}, wide{"16-byte loads of inputs", true, ""}, launches{"one launch", true, ""};
  StaticCheck little{"bytes in flight (Little's law)", true, ""};
  StaticCheck resident{std::to_string(min_blocks) + " blocks and " + std::to_string(min_warps) + " warps per SM", true, ""};
  auto fail = [](StaticCheck& c, const std::string& why) {
    c.holds = false;
    c.why += (c.why.empty() ? "" : "; ") + why;
  };
  for (const KernelReview& k : review.kernels) {
    const KernelResources& r = k.resources;
    if (r.spill_store_bytes > 0 || r.spill_load_bytes > 0)
      fail(spills, r.name + " spills " + std::to_string(r.spill_store_bytes) + " bytes (stores) and " + std::to_string(r.spill_load_bytes) +
                       " (loads)");
    if (k.occupancy.blocks < min_blocks || k.occupancy.warps < min_warps)
      fail(resident, r.name + ": " + std::to_string(k.occupancy.blocks) + " block(s), " + std::to_string(k.occupancy.warps) + " warps (" +
                         k.occupancy.limit + ")");
    for (const auto& [bytes, count] : k.input_load_widths)
      if (bytes != 16) fail(wide, r.name + ": " + std::to_string(count) + " load(s) of " + std::to_string(bytes) + " bytes");
    const int64_t resident = std::min<int64_t>(k.launch.grid_blocks, int64_t(review.sms) * k.occupancy.blocks);
    const int64_t in_flight = resident * k.loads.ahead, need = std::min(little_bytes, k.launch.grid_blocks * k.loads.total);
    if (in_flight < need)
      fail(little, r.name + ": " + std::to_string(resident) + " blocks keep " + std::to_string(in_flight / 1024) + " KiB in flight of the " +
                       std::to_string(need / 1024) + " KiB needed");
  }
  if (review.launches() != 1)
    fail(launches, std::to_string(review.kernels.size()) + " kernel(s) and " + std::to_string(review.library_calls) + " cuBLAS call(s)");
  std::vector<StaticCheck> checks{spills, resident, wide};
  if (one_launch) checks.push_back(launches);
  if (little_bytes > 0) checks.push_back(little);
  return checks;
}

}  // namespace prism::backend::cuda
