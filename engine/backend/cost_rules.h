// What the cost model (tune/cost_model.h) asks a backend: the few ways one kind of machine runs
// generated code that the model's walk over tiles, bytes and flops cannot know. The model is one
// for every backend and never names one; each backend answers these from its own description
// (cpu/cost_rules.h, cuda/cost_rules.h). A default answer is "nothing special".
#pragma once
#include <cstdint>
#include <vector>

#include "engine/backend/target.h"
#include "engine/ir/dtype.h"

namespace prism::backend {

// A matmul of a block: its tiles (concrete sizes) and the dtypes its operands are stored at (a
// loaded tensor's, F32 for a tile computed in the block).
struct BlockMatmul {
  std::vector<int64_t> a, b;
  DType a_storage = DType::F32, b_storage = DType::F32;
  bool b_loaded = false;   // B is a load (not computed in the block)
  bool all_16bit = false;  // every input and output of the instance is stored at 16 bits
  int64_t blocks_per_core = 1;  // blocks of its kernel a core runs at once (CostRules::residency)
};

// A library kernel's matmul: its output's and A's shapes (A as the library reads it, through its
// view), the dtypes, and whether B lies with K contiguous (an nn.Linear weight read as W^T).
struct LibraryMatmul {
  std::vector<int64_t> out, a;
  DType a_dtype = DType::F32, b_dtype = DType::F32, out_dtype = DType::F32;
  bool b_rows_along_k = false;
};

// How a backend's library matmul runs.
struct LibraryMatmulCost {
  int64_t chunks = 0;          // parallel chunks spread over the cores (0: a whole-tensor call)
  double flop_factor = 1;      // its flops cost this many times their count at the peak
  int64_t b_piece = 0;         // B's rows are read in pieces of this many elements (0: whole)
  double b_stream_passes = 0;  // B's bytes move this many more times at memory's bandwidth
};

// A custom kernel's loop as double buffering sees it.
struct LoopTiles {
  double iterations = 1;     // the loop's range
  double body_bytes = 0;     // bytes a block loads in each iteration
  double resident_bytes = 0; // the block's tile footprint besides them
  double block_bytes = 0;    // bytes a block loads in all
};

// How a custom kernel's blocks share a core: how many it runs at once, and the bytes each keeps
// requested from memory while it streams (0: the model prices no memory latency).
struct BlockResidency {
  int64_t blocks_per_core = 1;
  double bytes_in_flight = 0;
};

class CostRules {
 public:
  virtual ~CostRules() = default;
  // Lanes a vector instruction has for f32: a tile narrower than that wastes the rest.
  virtual int vector_lanes(const TargetDescription& target) const = 0;
  // The cost of a block matmul's flops over their count at the f32 peak (tensor cores, widening
  // a 16-bit B, a matrix unit, the chains of dependent steps a GPU's warps run): below 1 where it
  // runs faster than f32 FMAs.
  virtual double block_matmul_factor(const BlockMatmul& m, const TargetDescription& target) const;
  // Where a block matmul reads its loaded B's rows in pieces, their length in elements; else 0.
  virtual int64_t b_row_piece(const BlockMatmul& m, const TargetDescription& target) const;
  // The bytes' worth of streaming each contiguous run of a tile costs on top of its own bytes (the
  // cost model's assumption 7); the default, a CPU's, 256: a new DRAM page and a hardware
  // prefetch stream restarting.
  virtual double run_overhead_bytes(const TargetDescription& target) const;
  // The cache private to the core that runs a block, whose overflow by the block's computed and
  // loaded tiles moves through the next level (0: the model counts no such traffic).
  virtual int64_t private_cache_bytes(const TargetDescription& target) const;
  // Whether a kernel's data movement overlaps its compute (else they take the sum).
  virtual bool overlaps(const LoopTiles& loop, const TargetDescription& target) const;
  // How a custom kernel's blocks share a core and keep memory busy (the cost model's assumption
  // 11, Little's law); the default: one block a core, no latency priced.
  virtual BlockResidency residency(const LoopTiles& loop, const TargetDescription& target) const;
  // The time a load takes under load, which bytes in flight must cover (0: none priced).
  virtual double memory_latency_seconds(const TargetDescription& target) const;
  // The part of the smaller of streaming and compute that does not hide behind the larger.
  virtual double overlap_loss() const;
  // What a statement of a custom kernel's block costs each time it runs beyond its work (a GPU's
  // barrier after it); the default: nothing.
  virtual double statement_seconds(const TargetDescription& target) const;
  // A library matmul; the default is a whole-tensor call at the peak.
  virtual LibraryMatmulCost library_matmul(const LibraryMatmul& m, const TargetDescription& target) const;
  // The flop rate no matmul of tensors stored at `storage` beats here (the roofline's peak).
  virtual double peak_gflops(DType storage, const TargetDescription& target) const;
  // The cores a kernel runs on: a custom kernel or a library matmul for `work` element operations
  // per call (each statement's elements, a matmul's output times its depth), a library loop
  // (`loop`: an elementwise or row op over whole tensors) for `work` elements; the default: all.
  virtual int kernel_cores(double work, bool loop, const TargetDescription& target) const;
  // Whether a custom kernel of `tail_blocks` blocks that reads what the one before it saved, in
  // `groups` groups (sgraph/tail_groups.h), runs in that kernel's launch, and on how many blocks
  // at once: 0 where it takes a launch of its own; else it costs no launch, its blocks running on
  // that many (a GPU's: the groups, whose last blocks run them, or every SM, where they wait for
  // the first kernel's). The default: 0.
  virtual int64_t tail_blocks_at_once(int64_t groups, int64_t first_blocks, int64_t tail_blocks, const TargetDescription& target) const;
};

}  // namespace prism::backend
