// A kernel that sums what the kernel before it saved (a split-k kernel's partials, then the
// kernel that sums them and applies the epilogue), seen from the maps: into how many groups the
// two kernels' blocks fall, each group's blocks of the second reading only what the same group's
// blocks of the first save. A backend may run such a second kernel in the first one's launch
// (CostRules::tail_blocks_at_once; the CUDA backend's ticket, cuda/ticket.h, traces the same groups
// element by element); the cost model prices it so.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/sgraph/instantiate.h"

namespace prism::sgraph {

// The groups kernel k of `inst` forms with kernel k - 1: along each dim of a tensor k - 1 saves
// and k loads, the blocks of k - 1 split it into h pieces (a partial axis: its grid dim's size)
// and those of k into t; where one divides the other a dim gives min(h, t) groups, else 1, and
// the groups are their product (the fewest over the tensors). 0 where kernel k is no such tail:
// k = 0, either kernel not custom, kernel k loads nothing k - 1 saves or reads it through a view,
// or writes a tensor kernel k - 1 reads or writes.
int64_t tail_groups(const Instance& inst, size_t k);

}  // namespace prism::sgraph
