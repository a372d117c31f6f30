// A kernel's global loads as its PTX issues them, read without a GPU: each `ld.global` and each
// `cp.async` from global to shared memory, its bytes per instruction and thread, and the pointer
// parameter its address is computed from. The static review (review.h; docs/tuning.md, "Static
// checks") asks which loads of the program's inputs are narrower than 16 bytes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace prism::backend::cuda {

struct GlobalLoad {
  int64_t bytes = 0;  // per instruction and thread
  int param = -1;     // the entry's parameter (0 first) the address derives from; -1: none, or more than one
};

// The global loads in the body of entry `kernel` in `ptx`, in order: `ld.global` (its vector width
// times its type's size) and `cp.async` / `cp.async.bulk` from global to shared memory (the copy's
// size; a bulk copy at least 16). An address's parameter is followed through the registers the
// body computes it in (`ld.param`, then moves and arithmetic, loops included); a value loaded from
// memory derives from no parameter. Empty when the entry is not there.
std::vector<GlobalLoad> global_loads(std::string_view ptx, const std::string& kernel);

// The same loads counted by bytes per instruction.
std::map<int64_t, int> global_load_widths(std::string_view ptx, const std::string& kernel);

}  // namespace prism::backend::cuda
