#include "engine/backend/cuda/cost_rules.h"

#include <algorithm>

#include "engine/backend/cuda/codegen.h"
#include "engine/backend/cuda/gpu_features.h"
#include "engine/backend/cuda/ticket.h"

namespace prism::backend::cuda {

namespace {

// A matmul mma.sync takes gathers each lane's elements one by one (docs/tuning.md, "The GPU's cost
// rules"): its rate is the tensor cores' over this, times the part of each fragment it fills.
constexpr double kMmaGather = 8;
// The decode form's A gathered element by element (docs/tuning.md, "The GPU's cost rules").
constexpr double kDecodeGather = 2;
// The granularity of a GPU's global memory accesses.
constexpr double kSectorBytes = 32;
// A warp's 32 lanes run one instruction together: a tile narrower than that wastes the rest.
constexpr int kWarpLanes = 32;

}  // namespace

int CudaCostRules::vector_lanes(const TargetDescription&) const { return kWarpLanes; }

double CudaCostRules::block_matmul_factor(const BlockMatmul& m, const TargetDescription& target) const {
  const double tensor_peak = gpu_features(target).tensor_peak_gflops;
  if (tensor_peak <= 0 || tensor_core_storage(m.a_storage, m.b_storage, m.all_16bit) == DType::F32) return 1;
  const bool both = m.a_storage != DType::F32 && m.b_storage != DType::F32;  // WMMA's case when the shape fits
  if (m.a.size() < 2 || m.b.size() < 2) return 1;
  const int64_t rows = m.a[m.a.size() - 2], k = m.a.back(), n = m.b.back();
  // The decode form fills the instruction's 16 rows with B's columns and its 8 columns with A's
  // rows, wasting only the columns past A's last row group; an A computed in the block is gathered
  // (a third of the fragment's registers) where a staged one comes through ldmatrix.
  if (m.b_storage != DType::F32 && decode_tensor_core_shape(rows, n, k)) {
    const double fill = double(rows) / double(8 * ((rows + 7) / 8));
    return std::min(1.0, target.peak_gflops / (tensor_peak * fill) * (m.a_storage == m.b_storage ? 1.0 : kDecodeGather));
  }
  if (both && tensor_core_shape(rows, n, k)) return target.peak_gflops / tensor_peak;
  const double fill = double(rows) / double(16 * ((rows + 15) / 16)) * double(n) / double(8 * ((n + 7) / 8)) * double(k) / double(16 * ((k + 15) / 16));
  return std::min(1.0, target.peak_gflops * kMmaGather / (tensor_peak * fill));
}

// A GPU reads global memory in 32-byte sectors, and its many DRAM banks serve a grid's narrow
// runs side by side with no prefetch stream to restart: a run costs at most a sector's worth more.
double CudaCostRules::run_overhead_bytes(const TargetDescription&) const { return kSectorBytes; }

bool CudaCostRules::overlaps(const LoopTiles& loop, const TargetDescription& target) const {
  // double_buffer.h's condition as the model sees it: more than one iteration, and the body's
  // tiles fit a second time beside the block's footprint.
  return loop.iterations > 1 && loop.body_bytes > 0 && loop.resident_bytes + loop.body_bytes <= double(target.fast_memory_bytes);
}

double CudaCostRules::peak_gflops(DType storage, const TargetDescription& target) const {
  if (storage == DType::F32) return target.peak_gflops;
  const double tensor_peak = gpu_features(target).tensor_peak_gflops;
  return tensor_peak > 0 ? tensor_peak : target.peak_gflops;
}

// A kernel that reads the one before it runs in that one's launch: split-k's combining kernel by
// the ticket's groups where its tables allow, else its blocks after the first kernel's, waiting for
// them, on every SM (docs/tuning.md, "Split-k in one launch").
int64_t CudaCostRules::tail_blocks_at_once(int64_t groups, int64_t first_blocks, int64_t tail_blocks, const TargetDescription& target) const {
  return tail_in_launch(groups, first_blocks, tail_blocks) ? groups : std::max(1, target.cores);
}

}  // namespace prism::backend::cuda
