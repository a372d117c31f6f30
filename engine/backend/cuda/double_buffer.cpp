#include "engine/backend/cuda/double_buffer.h"

#include <set>

#include "engine/ir/shape.h"

namespace prism::backend::cuda {

namespace {

constexpr int64_t kSlotAlign = 128;  // as the lowering aligns shared slots, and more than wmma's 32

int64_t aligned(int64_t bytes) { return (bytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign; }

}  // namespace

DoubleBuffer plan_double_buffer(const kir::CustomKernel& kernel, int64_t shared_limit) {
  DoubleBuffer none{{}, kernel.fast_memory_bytes};
  if (kernel.loop <= 1) return none;
  std::set<int> staged;
  std::set<std::string> read;
  for (const kir::Stmt& s : kernel.body)
    if (s.kind == kir::Stmt::Kind::Stage && s.out.kind == kir::Place::Kind::Tile) staged.insert(s.out.value), read.insert(s.in[0].tensor);
  if (staged.empty()) return none;
  // A load brought forward past a save of the same tensor would read it before it is written.
  for (const auto* phase : {&kernel.before, &kernel.body, &kernel.after})
    for (const kir::Stmt& s : *phase)
      if (s.kind == kir::Stmt::Kind::Save && read.count(s.out.tensor)) return none;
  for (const kir::Stmt& s : kernel.after)
    for (const kir::Place& in : s.in)
      if (in.kind == kir::Place::Kind::Tile && staged.count(in.value)) return none;
  DoubleBuffer plan;
  int64_t end = aligned(kernel.fast_memory_bytes);
  for (const kir::Tile& t : kernel.tiles) {
    if (!staged.count(t.value)) continue;
    plan.tiles.push_back({t.value, t.storage, t.offset_bytes, end});
    end = aligned(end + element_count(t.shape) * dtype_bytes(t.storage));
  }
  if (end > shared_limit) return none;
  plan.shared_bytes = end;
  return plan;
}

}  // namespace prism::backend::cuda
