// Lowering an instantiated sGraph to the kernel IR (kernel_ir.h), once for every backend. What
// the backends may choose differently is said in LowerOptions; everything else (the grid, the
// phases, the places of tiles and tensor boxes, accumulators, which op reads which value) is
// decided here, so the CPU tests exercise the lowering the GPU uses too.
#pragma once
#include <functional>

#include "engine/backend/kernel_ir.h"
#include "engine/sgraph/instantiate.h"

namespace prism::backend {

struct LowerOptions {
  // Loads are copied into tiles (a GPU's shared memory); else a load is read where it lies.
  bool stage_loads = false;
  // A matmul whose only use is a sum accumulator of its shape adds into it in the loop body (no
  // tile of its own, no pass that adds it).
  bool matmul_into_accumulator = true;
  // An op whose only use is a save in the same phase writes straight into the saved tensor.
  bool write_in_place = true;
  // Tile layout: the accumulators first, then the other tiles, each in op order (else all in op
  // order). The CPU's measured layouts keep accumulators first.
  bool accumulators_first = true;
  int64_t tile_align_bytes = 64;  // every tile starts on this boundary
  std::string who = "codegen";    // names the backend in error messages
  // A load viewed with its last two dims swapped (W^T of an nn.Linear weight) that only matmuls
  // read as their B is read in place (the printer has a kernel for a transposed B); else a view
  // that does not keep the tensor's last dim last is copied into a tile.
  bool transposed_b_in_place = true;
  // A staged load whose view swaps the tensor's last two dims (W^T of an nn.Linear weight, K^T)
  // and that only matmuls read as their B is copied in the tensor's own order (its rows
  // contiguous, as 16-byte vectors copy them) and read through a transposed view of its tile.
  bool stage_transposed_as_stored = false;
  // Where set and true for a matmul (A's dtype as the kernel reads it, B's, A's rows), its B is
  // read in place however many rows A has (the CPU's AMX tiles multiply it as it lies).
  std::function<bool(DType, DType, int64_t)> transposed_b_any_rows;
  // A staged load's tile holds f32 (widened as it is copied), else its tensor's dtype (16-bit
  // tiles feed a GPU's tensor cores; a CPU reads f32 tiles faster than it converts on every read).
  bool wide_staged_tiles = false;
};

inline LowerOptions cpu_lowering() {
  LowerOptions options;
  options.wide_staged_tiles = true;
  return options;
}
inline LowerOptions cuda_lowering() {
  LowerOptions options;
  options.stage_loads = true;
  options.write_in_place = false;
  options.accumulators_first = false;
  options.tile_align_bytes = 32;
  options.who = "cuda codegen";
  options.transposed_b_in_place = false;
  options.stage_transposed_as_stored = true;
  return options;
}

// Throws Error{InvalidArgument} naming what it cannot lower (an open map, an invalid graph, an op
// that is not a block op, a tile whose rank differs from its tensor's).
kir::Program lower(const sgraph::Instance& instance, const LowerOptions& options);

// The text of an offset: "b0 * 64L + f * 4096L" with `loop` for the loop index ("0": its terms
// are left out) and `suffix` ending every literal; "0" for no terms.
std::string offset_text(const kir::Offset& offset, const std::string& loop, const std::string& suffix);

}  // namespace prism::backend
