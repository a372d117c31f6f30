#include "engine/backend/cpu/cost_rules.h"

#include <algorithm>

#include "engine/backend/cpu/amx_kernel.h"
#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/emit_ops.h"
#include "engine/backend/cpu/parallel_grain.h"
#include "engine/ir/shape.h"

namespace prism::backend::cpu {

namespace {

// Streaming overlaps compute only in part on a core (docs/tuning.md, "The CPU's cost rules").
constexpr double kOverlapLoss = 0.5;
// OpenBLAS's sgemm packs B into panels on every call, and runs below the FMA peak (same section).
constexpr double kVendorPackPasses = 3;
constexpr double kVendorGemmEfficiency = 0.5;
// Splitting one f16 element of B into bf16 words for the tiles (amx_split_kernel.h), and pairing
// one bf16 element with its neighbour row's, in flops at the f32 FMA peak (same section).
constexpr double kAmxF16StageFlops = 20;
constexpr double kAmxPairStageFlops = 5;

// A matmul of an A tile of `rows` rows (its dtype as the micro-kernel reads it) and a B tile runs
// on AMX tiles: bf16 x bf16; where AVX-512 splits the operands, f16 B against f16 or f32 A and
// bf16 B against f32 A from the rows detail::amx_matmul says.
bool amx(DType a_dtype, DType b_dtype, int64_t rows, const TargetDescription& target) {
  const CpuFeatures& cpu = cpu_features(target);
  if (cpu.bf16_amx_gflops <= 0) return false;
  if (a_dtype == DType::BF16 && b_dtype == DType::BF16) return true;
  return cpu.simd_bytes == 64 && detail::amx_matmul(a_dtype, b_dtype, rows, false);
}

// The cost of an A tile times a B tile's flops over their count at the f32 FMA peak: AMX tiles
// (two tile products and a split for an f16 B or an f32 A), vdpbf16ps where it beats the FMAs,
// else the register blocks the code generator chooses, widening a 16-bit B.
double matmul_rate(const std::vector<int64_t>& a, const std::vector<int64_t>& b, DType a_dtype, DType b_dtype, const TargetDescription& target) {
  if (a.size() < 2 || b.size() < 2) return 1;
  const int64_t rows = a[a.size() - 2];
  const CpuFeatures& cpu = cpu_features(target);
  if (amx(a_dtype, b_dtype, rows, target) && b_dtype == DType::F16)
    return 2 * target.peak_gflops / cpu.bf16_amx_gflops + kAmxF16StageFlops / (2.0 * double(rows));
  if (amx(a_dtype, b_dtype, rows, target) && a_dtype == DType::F32)
    return 2 * target.peak_gflops / cpu.bf16_amx_gflops + kAmxPairStageFlops / (2.0 * double(rows));
  if (amx(a_dtype, b_dtype, rows, target)) return target.peak_gflops / cpu.bf16_amx_gflops;
  if (a_dtype == DType::BF16 && b_dtype == DType::BF16 && cpu.bf16_dot_peak_gflops > 0 && cpu.simd_bytes == 64)
    return target.peak_gflops / cpu.bf16_dot_peak_gflops;
  return detail::widening_factor(detail::choose_blocking(a[a.size() - 2], b.back(), a.back(), cpu.simd_bytes, b_dtype), b_dtype,
                                 cpu.simd_bytes);
}

}  // namespace

int CpuCostRules::vector_lanes(const TargetDescription& target) const { return std::max(1, cpu_features(target).simd_bytes / 4); }

double CpuCostRules::block_matmul_factor(const BlockMatmul& m, const TargetDescription& target) const {
  return m.b_loaded ? matmul_rate(m.a, m.b, m.a_storage, m.b_storage, target) : 1;
}

int64_t CpuCostRules::b_row_piece(const BlockMatmul& m, const TargetDescription& target) const {
  const int64_t rows = m.a.size() < 2 ? 1 : m.a[m.a.size() - 2];
  if (!amx(m.a_storage, m.b_storage, rows, target) || m.b.size() < 2) return 0;
  return detail::amx_block_columns(m.a_storage, m.b_storage, rows, m.b[m.b.size() - 2], m.b.back());
}

int64_t CpuCostRules::private_cache_bytes(const TargetDescription& target) const { return target.l1_bytes; }

double CpuCostRules::overlap_loss() const { return kOverlapLoss; }

LibraryMatmulCost CpuCostRules::library_matmul(const LibraryMatmul& m, const TargetDescription& target) const {
  LibraryMatmulCost cost;
  if (m.b_dtype != DType::F32 && m.out.size() >= 2 && m.a.size() >= 2) {
    // prism's 16-bit matmul: the micro-kernel on chunks, B's rows read a chunk's width at a time.
    const int64_t rows = m.out[m.out.size() - 2], n = m.out.back(), batch = element_count(m.out) / std::max<int64_t>(1, rows * n);
    const detail::MatmulChunks chunks = detail::library_matmul_chunks(batch, rows, n, m.b_dtype, target.cores);
    cost.chunks = chunks.count;
    cost.flop_factor = matmul_rate({chunks.rows, m.a.back()}, {m.a.back(), chunks.columns}, m.a_dtype, m.b_dtype, target);
    cost.b_piece = m.b_rows_along_k ? n  // the NT kernels read B^T's rows whole
                   : amx(m.a_dtype, m.b_dtype, chunks.rows, target)
                       ? std::min<int64_t>(chunks.columns, detail::amx_block_columns(m.a_dtype, m.b_dtype, chunks.rows, m.a.back(), chunks.columns))
                       : chunks.columns;
  } else if (m.b_dtype == DType::F32 && m.a_dtype == DType::F32 && m.out_dtype == DType::F32) {
    // OpenBLAS's sgemm, packing B every call.
    cost.b_stream_passes = kVendorPackPasses;
    cost.flop_factor = 1 / kVendorGemmEfficiency;
  }
  return cost;
}

double CpuCostRules::peak_gflops(DType storage, const TargetDescription& target) const {
  if (storage == DType::F32) return target.peak_gflops;
  const CpuFeatures& cpu = cpu_features(target);
  const double widened = storage == DType::BF16 ? cpu.widen_bf16_gflops : cpu.widen_f16_gflops;
  const double fmas = widened > 0 ? widened : target.peak_gflops;
  if (storage == DType::BF16) return std::max({fmas, cpu.bf16_dot_peak_gflops, cpu.bf16_amx_gflops});
  return cpu.simd_bytes == 64 ? std::max(fmas, cpu.bf16_amx_gflops / 2) : fmas;
}

int CpuCostRules::kernel_cores(double work, bool loop, const TargetDescription& target) const {
  return above_grain(work, loop) ? target.cores : 1;
}

}  // namespace prism::backend::cpu
