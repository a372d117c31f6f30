// A GPU's answers to the cost model's questions (backend/cost_rules.h): a warp's lanes, tensor
// cores for 16-bit block matmuls (WMMA where the shape fits, mma.sync otherwise) at the rate their
// warps' chains of dependent steps keep them busy, data movement that overlaps compute only where
// the code generator double-buffers the loop (double_buffer.h), the blocks an SM holds and the
// bytes they keep in flight, and a kernel that reads the one before it in that one's launch
// (ticket.h).
// The rules and their calibration: docs/tuning.md, "The GPU's cost rules".
#pragma once
#include "engine/backend/cost_rules.h"

namespace prism::backend::cuda {

// A loaded HBM's latency: the bytes in flight a device needs to stream at its bandwidth are the
// bandwidth times this (Little's law). A guess (public microbenchmarks put an H100's unloaded DRAM
// latency near 0.5-0.7 us; queues under load add to it) until a lent GPU's Nsight Compute run
// measures it. The cost model's residency rule and the static review's check read it.
constexpr double kLoadedLatencySeconds = 1e-6;

class CudaCostRules final : public CostRules {
 public:
  int vector_lanes(const TargetDescription& target) const override;
  double block_matmul_factor(const BlockMatmul& m, const TargetDescription& target) const override;
  double run_overhead_bytes(const TargetDescription& target) const override;
  bool overlaps(const LoopTiles& loop, const TargetDescription& target) const override;
  BlockResidency residency(const LoopTiles& loop, const TargetDescription& target) const override;
  double memory_latency_seconds(const TargetDescription& target) const override;
  double statement_seconds(const TargetDescription& target) const override;
  double peak_gflops(DType storage, const TargetDescription& target) const override;
  int64_t tail_blocks_at_once(int64_t groups, int64_t first_blocks, int64_t tail_blocks, const TargetDescription& target) const override;
};

}  // namespace prism::backend::cuda
