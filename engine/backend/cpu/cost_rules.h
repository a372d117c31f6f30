// The CPU's answers to the cost model's questions (backend/cost_rules.h): SIMD lanes, the micro-
// kernel's register blocks and their widening of a 16-bit B, AMX tiles and vdpbf16ps, L1 as the
// private cache, streaming that overlaps compute only in part, the library matmuls (prism's
// 16-bit one on chunks, OpenBLAS's sgemm) and one core below the grain (parallel_grain.h). The
// rules and their calibration: docs/tuning.md, "The CPU's cost rules".
#pragma once
#include "engine/backend/cost_rules.h"

namespace prism::backend::cpu {

class CpuCostRules final : public CostRules {
 public:
  int vector_lanes(const TargetDescription& target) const override;
  double block_matmul_factor(const BlockMatmul& m, const TargetDescription& target) const override;
  int64_t b_row_piece(const BlockMatmul& m, const TargetDescription& target) const override;
  int64_t private_cache_bytes(const TargetDescription& target) const override;
  double overlap_loss() const override;
  LibraryMatmulCost library_matmul(const LibraryMatmul& m, const TargetDescription& target) const override;
  double peak_gflops(DType storage, const TargetDescription& target) const override;
  int kernel_cores(double work, bool loop, const TargetDescription& target) const override;
};

}  // namespace prism::backend::cpu
