#include "engine/backend/cost_rules.h"

namespace prism::backend {

double CostRules::block_matmul_factor(const BlockMatmul&, const TargetDescription&) const { return 1; }

int64_t CostRules::b_row_piece(const BlockMatmul&, const TargetDescription&) const { return 0; }

double CostRules::run_overhead_bytes(const TargetDescription&) const { return 256; }

int64_t CostRules::private_cache_bytes(const TargetDescription&) const { return 0; }

bool CostRules::overlaps(const LoopTiles&, const TargetDescription&) const { return true; }

BlockResidency CostRules::residency(const LoopTiles&, const TargetDescription&) const { return {}; }

double CostRules::memory_latency_seconds(const TargetDescription&) const { return 0; }

double CostRules::overlap_loss() const { return 0; }

double CostRules::statement_seconds(const TargetDescription&) const { return 0; }

LibraryMatmulCost CostRules::library_matmul(const LibraryMatmul&, const TargetDescription&) const { return {}; }

double CostRules::peak_gflops(DType, const TargetDescription& target) const { return target.peak_gflops; }

int CostRules::kernel_cores(double, bool, const TargetDescription& target) const { return target.cores; }
int64_t CostRules::tail_blocks_at_once(int64_t, int64_t, int64_t, const TargetDescription&) const { return 0; }

}  // namespace prism::backend
