#include "engine/backend/cuda/cost_rules.h"

#include <algorithm>

#include "engine/backend/cuda/codegen.h"
#include "engine/backend/cuda/double_buffer.h"
#include "engine/backend/cuda/emit_ops.h"
#include "engine/backend/cuda/gpu_features.h"
#include "engine/backend/cuda/resources.h"
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
// What a block's barrier after each statement costs it (docs/tuning.md, "The GPU's cost rules"): a
// guess until a GPU measures it.
constexpr double kBarrierSeconds = 50e-9;
// The chains of dependent tensor-core steps that keep an SM's tensor cores busy (docs/tuning.md,
// "The GPU's cost rules"): a guess until a GPU measures it.
constexpr double kChainsToFill = 32;
// A WMMA fragment's step in m16n8k16 instructions' work (every shape it takes is 16 x 16 x 16).
constexpr double kWmmaStepInstructions = 2;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The threads of a block at the target's schedule.
int block_threads(const TargetDescription& target) {
  const int threads = gpu_features(target).threads_per_block;
  return threads > 0 ? threads : CudaCodegenOptions{}.threads_per_block;
}

// The stages the code generator pipelines a loop of these tiles in (double_buffer.h).
int loop_stages(const LoopTiles& loop, const TargetDescription& target) {
  if (loop.body_bytes <= 0) return 1;
  auto shared_at = [&](int stages) { return int64_t(loop.resident_bytes + (stages - 1) * loop.body_bytes); };
  return pipeline_stages(shared_at, int64_t(loop.iterations), target.fast_memory_bytes, CudaCodegenOptions{}.pipeline_stages);
}

// The part of an SM's tensor-core rate a block matmul keeps busy: the code generator gives each
// warp output tiles one after another (k split across warps where there are more warps than
// tiles: mma_k_split), so a block runs `instructions` m16n8k16 steps in chains of
// `steps_per_warp`, and the blocks an SM holds run theirs side by side.
double chain_fill(const BlockMatmul& m, const TargetDescription& target, bool decode, bool wmma) {
  const int threads = block_threads(target);
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < m.a.size(); ++i) batch *= m.a[i];
  const int64_t rows = m.a[m.a.size() - 2], k = m.a.back(), n = m.b.back(), steps = ceil_div(k, 16), warps = std::max(1, threads / 32);
  double instructions = 0;
  int64_t per_warp = 0;
  if (wmma) {
    const int64_t tiles = batch * rows * n / 256;
    instructions = kWmmaStepInstructions * double(tiles * steps);
    per_warp = ceil_div(tiles, warps) * steps;
  } else {
    const int64_t tiles = batch * (decode ? ceil_div(rows, 8) * (n / 16) : ceil_div(rows, 16) * ceil_div(n, 8));
    const int64_t split = detail::mma_k_split(tiles, k, threads);
    instructions = double(tiles * steps);
    per_warp = ceil_div(tiles * split, warps) * ceil_div(steps, split);
  }
  if (per_warp <= 0) return 1;
  // A core of a schedule of several blocks an SM is a slot with that share of its tensor cores.
  const double to_fill = kChainsToFill / double(gpu_features(target).blocks_per_sm);
  return std::min(1.0, double(m.blocks_per_core) * instructions / (double(per_warp) * to_fill));
}

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
    return std::min(1.0, target.peak_gflops / (tensor_peak * fill * chain_fill(m, target, true, false)) *
                             (m.a_storage == m.b_storage ? 1.0 : kDecodeGather));
  }
  if (both && tensor_core_shape(rows, n, k)) return std::min(1.0, target.peak_gflops / (tensor_peak * chain_fill(m, target, false, true)));
  const double fill = double(rows) / double(16 * ((rows + 15) / 16)) * double(n) / double(8 * ((n + 7) / 8)) * double(k) / double(16 * ((k + 15) / 16));
  return std::min(1.0, target.peak_gflops * kMmaGather / (tensor_peak * fill * chain_fill(m, target, false, false)));
}

// A GPU reads global memory in 32-byte sectors, and its many DRAM banks serve a grid's narrow
// runs side by side with no prefetch stream to restart: a run costs at most a sector's worth more.
double CudaCostRules::run_overhead_bytes(const TargetDescription&) const { return kSectorBytes; }

// double_buffer.h's condition as the model sees it: more than one iteration, and the body's tiles
// fit a second time beside the block's footprint.
bool CudaCostRules::overlaps(const LoopTiles& loop, const TargetDescription& target) const { return loop_stages(loop, target) > 1; }

// The blocks a core holds at once (an SM, or a schedule's slot of one: gpu_features.h): as many as
// its share of an SM's threads, blocks and shared memory allow (registers are ptxas's to fit;
// review.h checks them); each keeps its pipeline's stages in flight (as it waits for one, the
// next ones' loads are out; one stage: an iteration's loads, issued together before their wait),
// or all it loads where it has no loop.
BlockResidency CudaCostRules::residency(const LoopTiles& loop, const TargetDescription& target) const {
  const SmLimits sm = sm90_limits();
  const int slots = std::max(1, gpu_features(target).blocks_per_sm), stages = loop_stages(loop, target);
  const double shared = loop.resident_bytes + double(stages - 1) * loop.body_bytes + double(sm.shared_reserved);
  int64_t blocks = std::min<int64_t>(sm.max_blocks / slots, sm.max_threads / slots / block_threads(target));
  blocks = std::min<int64_t>(blocks, int64_t(double(target.fast_memory_bytes + sm.shared_reserved) / shared));
  BlockResidency r;
  r.blocks_per_core = std::max<int64_t>(1, blocks);
  r.bytes_in_flight = loop.iterations > 1 && loop.body_bytes > 0 ? double(stages) * loop.body_bytes : loop.block_bytes;
  return r;
}

double CudaCostRules::memory_latency_seconds(const TargetDescription&) const { return kLoadedLatencySeconds; }

double CudaCostRules::statement_seconds(const TargetDescription&) const { return kBarrierSeconds; }

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
