#include "engine/sgraph/tail_groups.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace prism::sgraph {

namespace {

// Pieces of each dim of the tensor `load` reads that the blocks of a kernel with this grid cut
// it into by `map` (a save's map names the tile's dims, after the tensor's `partial` leading
// partial axes; each grid dim the map leaves out is one of those, in order).
std::vector<int64_t> pieces(const std::vector<Dim>& grid, const Map& map, size_t rank, int partial, const DimBindings& bindings,
                            bool saved) {
  std::vector<int64_t> out(rank, 1);
  int next_partial = 0;
  for (size_t i = 0; i < grid.size() && i < map.grid.size(); ++i) {
    const int64_t size = grid[i].evaluate_size(bindings);
    const Choice& c = map.grid[i];
    int dim = c.is_none() ? (saved ? next_partial++ : -1) : c.dim + (saved ? partial : 0);
    if (dim < 0 || size_t(dim) >= rank || (saved && c.is_none() && dim >= partial)) continue;
    out[size_t(dim)] *= size;
  }
  return out;
}

}  // namespace

int64_t tail_groups(const Instance& inst, size_t k) {
  const auto& kernels = inst.graph.kernels;
  if (k == 0 || k >= kernels.size() || !kernels[k - 1].custom || !kernels[k].custom) return 0;
  const CustomKernel &first = kernels[k - 1].block, &tail = kernels[k].block;
  const std::vector<std::string> first_reads = kernel_inputs(kernels[k - 1]), first_writes = kernel_outputs(kernels[k - 1]);
  std::set<std::string> touched(first_reads.begin(), first_reads.end());
  touched.insert(first_writes.begin(), first_writes.end());
  for (const std::string& t : kernel_outputs(kernels[k]))
    if (touched.count(t)) return 0;
  std::map<std::string, const BlockOp*> saves;
  for (const BlockOp& op : first.ops)
    if (op.kind == BlockOp::Kind::Save) saves[op.name] = &op;
  int64_t groups = 0;
  for (const BlockOp& load : tail.ops) {
    if (load.kind != BlockOp::Kind::Load) continue;
    auto saved = saves.find(load.tensor);
    if (saved == saves.end()) continue;
    if (!load.view.empty() || !saved->second->view.empty() || !inst.analysis.tensors.count(load.tensor)) return 0;
    const size_t rank = inst.analysis.tensors.at(load.tensor).shape.size();
    auto partial = inst.analysis.partial_axes.find(load.tensor);
    const int p = partial == inst.analysis.partial_axes.end() ? 0 : partial->second;
    const std::vector<int64_t> h = pieces(first.grid, saved->second->map, rank, p, inst.bindings, true),
                               t = pieces(tail.grid, load.map, rank, 0, inst.bindings, false);
    int64_t here = 1;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t lo = std::min(h[d], t[d]), hi = std::max(h[d], t[d]);
      if (hi % lo == 0) here *= lo;
    }
    groups = groups == 0 ? here : std::min(groups, here);
  }
  return groups;
}

}  // namespace prism::sgraph
