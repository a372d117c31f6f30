#include "engine/search/part_search.h"

#include <algorithm>
#include <functional>
#include <vector>

namespace prism::search {

std::optional<SearchResult> search_part(const Program& part, SearchLimits sub, double budget_s, const CancelToken* cancel, size_t keep) {
  // The saturation and the enumeration would cost as much as the whole program's search again
  // for op orders the tuner cannot tell apart: a part's families differ by their grids and loops,
  // which the plans of its seeds enumerate.
  sub.max_block_ops = 0;
  sub.prune = false;
  sub.budget_s = std::max(0.1, budget_s);
  SearchResult r = search_program(part, sub, cancel);
  if (r.candidates.empty()) return std::nullopt;
  auto grid_dims = [](const Candidate& c) {
    size_t n = 0;
    for (const sgraph::SGraph::Parameter& p : c.graph->parameter_roles()) n += p.role == sgraph::SGraph::Parameter::Role::Grid;
    return n;
  };
  std::stable_sort(r.candidates.begin(), r.candidates.end(), [&](const Candidate& a, const Candidate& b) {
    return a.kernels != b.kernels ? a.kernels < b.kernels : grid_dims(a) > grid_dims(b);
  });
  // The first of each kind a tuner may need at some sizes, then the most parallel: a family with a
  // loop (a reduced axis too long for one block's fast memory; online softmax's first, whose loop
  // walks the axis softmax reduces), one with a vendor matmul, one that reduces across blocks
  // (flash-decoding: few rows, a long axis).
  auto any_kernel = [](const Candidate& c, auto pred) { return std::any_of(c.graph->kernels.begin(), c.graph->kernels.end(), pred); };
  auto rescales = [&](const Candidate& c) {
    return any_kernel(c, [](const sgraph::Kernel& k) {
      return k.custom && std::any_of(k.block.ops.begin(), k.block.ops.end(), [](const sgraph::BlockOp& op) {
               return op.kind == sgraph::BlockOp::Kind::Accumulate && op.acc == sgraph::AccKind::Rescaled;
             });
    });
  };
  auto loops = [&](const Candidate& c) { return any_kernel(c, [](const sgraph::Kernel& k) { return k.custom && k.block.loop.has_value(); }); };
  auto vendor = [&](const Candidate& c) { return any_kernel(c, [](const sgraph::Kernel& k) { return k.vendor_matmul(); }); };
  auto combines = [&](const Candidate& c) {
    return std::count_if(c.graph->kernels.begin(), c.graph->kernels.end(), [](const sgraph::Kernel& k) { return k.custom; }) > 1;
  };
  auto first = [&](const std::function<bool(const Candidate&)>& kind) {
    return size_t(std::find_if(r.candidates.begin(), r.candidates.end(), kind) - r.candidates.begin());
  };
  std::vector<size_t> chosen = {0};
  const size_t rescaled = first(rescales);
  for (size_t i : {rescaled < r.candidates.size() ? rescaled : first(loops), first(vendor), first(combines)})
    if (i < r.candidates.size() && std::find(chosen.begin(), chosen.end(), i) == chosen.end() && chosen.size() < std::max<size_t>(keep, 3))
      chosen.push_back(i);
  for (size_t i = 1; i < r.candidates.size() && chosen.size() < keep; ++i)
    if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) chosen.push_back(i);
  std::vector<Candidate> kept;
  for (size_t i : chosen) kept.push_back(std::move(r.candidates[i]));
  r.candidates = std::move(kept);
  return r;
}

std::string indented(const std::string& text) {
  std::string out = "  ";
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

}  // namespace prism::search
