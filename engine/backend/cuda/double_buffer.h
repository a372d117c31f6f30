// Double buffering of a custom kernel's loop (codegen.h): the tiles its loop body stages get a
// second shared-memory slot, so that iteration f + 1's copies (cp.async) fly while iteration f
// computes. Without it a block loads its tiles, waits, then computes: with one block per SM (a
// decode matmul's 128 KiB weight tile) the memory idles during the math and the math during the
// loads.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend/kernel_ir.h"

namespace prism::backend::cuda {

struct BufferedTile {
  int value = -1;              // the block value the tile holds
  DType storage = DType::F32;  // its element type
  int64_t first = 0, second = 0;  // byte offsets of its two slots (first: the lowering's)
};

struct DoubleBuffer {
  std::vector<BufferedTile> tiles;  // empty: the loop stays single-buffered
  int64_t shared_bytes = 0;         // the block's shared memory with the second slots
};

// Every tile the body stages, when the loop runs more than once, no statement after the loop
// reads such a tile (it would find the last iteration's in either slot), the kernel saves to no
// tensor the body loads, and the second slots fit in `shared_limit` bytes beside the kernel's
// own. Else none.
DoubleBuffer plan_double_buffer(const kir::CustomKernel& kernel, int64_t shared_limit);

}  // namespace prism::backend::cuda
