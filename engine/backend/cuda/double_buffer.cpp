#include "engine/backend/cuda/double_buffer.h"

#include <algorithm>
#include <set>

#include "engine/ir/shape.h"

namespace prism::backend::cuda {

namespace {

constexpr int64_t kSlotAlign = 128;  // as the lowering aligns shared slots, and more than wmma's 32

int64_t aligned(int64_t bytes) { return (bytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign; }

}  // namespace

DoubleBuffer plan_double_buffer(const kir::CustomKernel& kernel, int64_t shared_limit, int max_stages) {
  DoubleBuffer none{1, {}, kernel.fast_memory_bytes};
  if (kernel.loop <= 1 || max_stages < 2) return none;
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
  auto planned = [&](int stages) {
    DoubleBuffer plan;
    plan.stages = stages;
    int64_t end = aligned(kernel.fast_memory_bytes);
    for (const kir::Tile& t : kernel.tiles) {
      if (!staged.count(t.value)) continue;
      BufferedTile tile{t.value, t.storage, {t.offset_bytes}};
      for (int extra = 1; extra < stages; ++extra) {
        tile.slots.push_back(end);
        end = aligned(end + element_count(t.shape) * dtype_bytes(t.storage));
      }
      plan.tiles.push_back(std::move(tile));
    }
    plan.shared_bytes = end;
    return plan;
  };
  const int stages = pipeline_stages([&](int s) { return planned(s).shared_bytes; }, kernel.loop, shared_limit, max_stages);
  return stages > 1 ? planned(stages) : none;
}

int pipeline_stages(const std::function<int64_t(int)>& shared_at, int64_t iterations, int64_t shared_limit, int max_stages) {
  if (iterations <= 1 || max_stages < 2) return 1;
  // A stage past the second never costs the block a neighbour: where two blocks fit with two
  // stages (each within half the limit), a deeper pipeline must fit twice too.
  const bool two_fit = shared_at(2) <= shared_limit / 2;
  for (int stages = int(std::min<int64_t>(max_stages, iterations)); stages >= 2; --stages)
    if (shared_at(stages) <= (stages > 2 && two_fit ? shared_limit / 2 : shared_limit)) return stages;
  return 1;
}

LoadsInFlight loads_in_flight(const kir::CustomKernel& kernel, const DoubleBuffer& buffers) {
  auto staged = [&](const std::vector<kir::Stmt>& stmts) {
    int64_t bytes = 0;
    for (const kir::Stmt& st : stmts) {
      if (st.kind != kir::Stmt::Kind::Stage) continue;
      for (const kir::Tile& t : kernel.tiles)
        if (t.value == st.out.value) bytes += element_count(st.out.shape) * dtype_bytes(t.storage);
    }
    return bytes;
  };
  const int64_t before = staged(kernel.before), body = staged(kernel.body), after = staged(kernel.after);
  LoadsInFlight out;
  out.total = before + kernel.loop * body + after;
  out.ahead = body == 0 ? before : int64_t(std::max(1, buffers.stages - 1)) * body;
  return out;
}

}  // namespace prism::backend::cuda
