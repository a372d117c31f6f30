// Split-k in one launch (issue 65; docs/tuning.md, "Split-k in one launch"): a custom kernel that reads
// what the custom kernel before it wrote (a split-k kernel's partials, then the kernel that sums
// them and applies the epilogue) runs as that kernel's tail, in its launch. The first kernel's
// blocks fall into groups: a group is every block that writes what some tail blocks read, and
// those tail blocks read nothing another group writes. Each block of the first kernel, once its
// writes are done, takes a ticket from its group's counter (a fence, then an atomic add); the
// last to arrive runs the group's tail blocks one after another and sets the counter back to 0,
// so that the counters are zero before and after every launch.
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

#include "engine/backend/kernel_ir.h"

namespace prism::backend::cuda {

struct TicketGroups {
  std::vector<int> group_of;     // each block of the first kernel: its group, -1 where no tail reads its writes
  std::vector<int> arrivals;     // each group: how many blocks of the first kernel it has
  std::vector<int> tail_start;   // group g runs tail blocks tail_blocks[tail_start[g] .. tail_start[g + 1])
  std::vector<int> tail_blocks;  // the tail's blocks, grouped, each group's in increasing order
  int groups() const { return int(arrivals.size()); }
};

// The groups by which kernel `first` + 1 of `program` runs as the tail of kernel `first`, or none
// where it may not: both custom kernels; the tail writes nothing the first kernel reads or
// writes; every tail block reads something the first kernel writes; at least two groups (one
// group would run every tail block on one block of the GPU); each grid and the tensors the two
// share small enough to trace element by element (kMaxTracedElements), the tables small enough
// for constant memory (kMaxTableEntries).
std::optional<TicketGroups> ticket_groups(const kir::Program& program, size_t first);

// Whether groups of this count over grids of these sizes run the tail in the first kernel's
// launch by tickets: at least two groups, tables within kMaxTableEntries. What ticket_groups
// decides, and what the cost rules tell the cost model (cost_rules.h, tail_blocks_at_once).
bool tail_in_launch(int64_t groups, int64_t first_blocks, int64_t tail_blocks);

// Whether kernel `first` + 1 may run in kernel `first`'s launch at all: both custom, the tail
// writes nothing the first kernel reads or writes, and reads something it writes. Where no
// tickets run it (one group: every tail block reads what every first block writes, as a down
// projection reads the whole gated product; or tables past their budget), it runs there as a
// tail that waits. Its blocks
// follow the first kernel's in the grid; each first block counts itself in once its writes are
// done, and each tail block waits until all have. A GPU dispatches a grid's blocks in index order,
// so when a tail block waits, every first block is running or done: the wait ends (the rule
// CUTLASS's serial split-k and CUB's decoupled look-back rest on). The last tail block to leave
// sets the counters back to 0.
bool waits_in_launch(const kir::Program& program, size_t first);

// The elements ticket_groups traces at most: beyond, the kernels launch one after the other.
constexpr int64_t kMaxTracedElements = int64_t(1) << 25;
// The most entries the groups' tables may have (both grids' blocks and the groups): the printer
// puts them in constant memory, 64 KiB for a whole module.
constexpr int64_t kMaxTableEntries = 2048;

}  // namespace prism::backend::cuda
