// Pipelined loads of a custom kernel's loop (codegen.h): the tiles its loop body stages get up to
// `stages` shared-memory slots each, so that the copies (cp.async) of the next stages - 1
// iterations fly while iteration f computes. Without it a block loads its tiles, waits, then
// computes: with one block per SM (a decode matmul's 128 KiB weight tile) the memory idles
// during the math and the math during the loads; with two slots (double buffering) one
// iteration's bytes are in flight, with three two iterations' (docs/tuning.md, "The CUDA target").
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/backend/kernel_ir.h"

namespace prism::backend::cuda {

struct BufferedTile {
  int value = -1;              // the block value the tile holds
  DType storage = DType::F32;  // its element type
  std::vector<int64_t> slots;  // byte offsets of its slots, one per stage (the first: the lowering's)
};

struct DoubleBuffer {
  int stages = 1;                   // 1: the loop stays single-buffered
  std::vector<BufferedTile> tiles;  // empty when single-buffered
  int64_t shared_bytes = 0;         // the block's shared memory with the extra slots
};

// The stages a loop of `iterations` gets, at most `max_stages`, where `shared_at(s)` is its
// block's shared memory with s: the most whose bytes fit `shared_limit`, more than two only within
// half of it where two stages are (a deeper pipeline never costs a second resident block); 1
// where two do not fit or the loop runs once. The cost model's rules ask it too (cost_rules.cpp).
int pipeline_stages(const std::function<int64_t(int)>& shared_at, int64_t iterations, int64_t shared_limit, int max_stages);

// Every tile the body stages, in the most stages up to `max_stages` (and the loop's range) whose
// extra slots fit in `shared_limit` bytes beside the kernel's own (more than two only within half
// of it where two stages are: a deeper pipeline never costs a second resident block), when the
// loop runs more than once, no statement after the loop reads such a tile (it would find the last
// iteration's in any slot) and the kernel saves to no tensor the body loads. Else none (one stage).
DoubleBuffer plan_double_buffer(const kir::CustomKernel& kernel, int64_t shared_limit, int max_stages);

// What a block of `kernel` asks of global memory: `ahead`, the bytes its copies keep in flight
// while it computes (a pipelined loop's next stages - 1 iterations' stagings; else one
// iteration's, issued together before their wait; without a loop the stagings before it), and
// `total`, the bytes it stages in all. The static review's Little's-law check reads them
// (review.h; docs/tuning.md, "Static checks").
struct LoadsInFlight {
  int64_t ahead = 0, total = 0;
};
LoadsInFlight loads_in_flight(const kir::CustomKernel& kernel, const DoubleBuffer& buffers);

}  // namespace prism::backend::cuda
