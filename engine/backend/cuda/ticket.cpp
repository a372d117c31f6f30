#include "engine/backend/cuda/ticket.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "engine/ir/shape.h"

namespace prism::backend::cuda {

namespace {

// Each block's indices b0, b1 … (the last grid dim fastest, as the printers flatten them).
std::vector<int64_t> block_indices(const std::vector<int64_t>& grid, int64_t block) {
  std::vector<int64_t> b(grid.size());
  for (size_t d = grid.size(); d-- > 0;) {
    b[d] = block % grid[d];
    block /= grid[d];
  }
  return b;
}

// Calls `at` with every element of `tensor` a box of it covers at block indices `b` and loop
// index f.
void box_elements(const kir::Place& place, const std::vector<int64_t>& b, int64_t f, const std::function<void(int64_t)>& at) {
  int64_t base = place.start;
  for (const kir::Term& t : place.offset) base += t.scale * (t.block < 0 ? f : b.at(size_t(t.block)));
  std::vector<int64_t> idx(place.shape.size(), 0);
  const int64_t n = element_count(place.shape);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = base;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * place.strides[d];
    at(off);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < place.shape[d]) break;
      idx[d] = 0;
    }
  }
}

// Calls `visit(place, f, written)` for every tensor box a block's statements touch, at each loop
// index its phase runs (the body every f, the others once at f = 0). A load read where it lies
// (Bind) reads its whole box.
void tensor_boxes(const kir::CustomKernel& k, const std::function<void(const kir::Place&, int64_t, bool)>& visit) {
  auto phase = [&](const std::vector<kir::Stmt>& stmts, int64_t iterations) {
    for (int64_t f = 0; f < iterations; ++f)
      for (const kir::Stmt& s : stmts) {
        for (const kir::Place& in : s.in)
          if (in.kind == kir::Place::Kind::Tensor) visit(in, f, false);
        if (s.out.kind == kir::Place::Kind::Tensor) visit(s.out, f, s.kind != kir::Stmt::Kind::Bind);
      }
  };
  phase(k.before, 1);
  phase(k.body, k.loop);
  phase(k.after, 1);
}

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) { return parent[size_t(x)] == x ? x : parent[size_t(x)] = find(parent[size_t(x)]); }
  void join(int a, int b) { parent[size_t(find(a))] = find(b); }
};

}  // namespace

bool tail_in_launch(int64_t groups, int64_t first_blocks, int64_t tail_blocks) {
  // The tables: a group per first block, the tail's blocks, and two per group (groups <= tail blocks).
  return groups >= 2 && first_blocks + tail_blocks + 2 * groups + 1 <= kMaxTableEntries;
}

bool waits_in_launch(const kir::Program& program, size_t first) {
  if (first + 1 >= program.kernels.size()) return false;
  const kir::Kernel &head = program.kernels[first], &tail = program.kernels[first + 1];
  if (!head.custom || !tail.custom) return false;
  const std::set<std::string> head_reads(head.reads.begin(), head.reads.end()), head_writes(head.writes.begin(), head.writes.end());
  for (const std::string& t : tail.writes)
    if (head_reads.count(t) || head_writes.count(t)) return false;
  return std::any_of(tail.reads.begin(), tail.reads.end(), [&](const std::string& t) { return head_writes.count(t) > 0; });
}

std::optional<TicketGroups> ticket_groups(const kir::Program& program, size_t first) {
  if (!waits_in_launch(program, first)) return std::nullopt;  // the pair a launch may hold at all
  const kir::Kernel &head = program.kernels[first], &tail = program.kernels[first + 1];
  const std::set<std::string> head_writes(head.writes.begin(), head.writes.end());
  const int64_t head_blocks = head.block.blocks(), tail_blocks = tail.block.blocks();
  if (!tail_in_launch(2, head_blocks, tail_blocks)) return std::nullopt;  // the tables past their budget, whatever the groups
  int64_t traced = head_blocks + tail_blocks;
  std::map<std::string, std::vector<int>> writer;  // a tensor the tail reads: each element's writing block
  for (const std::string& t : tail.reads)
    if (head_writes.count(t)) {
      traced += element_count(program.tensor(t).shape);
      writer[t];
    }
  if (writer.empty() || traced > kMaxTracedElements) return std::nullopt;
  for (auto& [name, by] : writer) by.assign(size_t(element_count(program.tensor(name).shape)), -1);

  // Blocks 0 … head_blocks - 1 are the first kernel's, then the tail's.
  UnionFind sets(size_t(head_blocks + tail_blocks));
  for (int64_t blk = 0; blk < head_blocks; ++blk) {
    const std::vector<int64_t> b = block_indices(head.block.grid, blk);
    tensor_boxes(head.block, [&](const kir::Place& p, int64_t f, bool written) {
      auto it = writer.find(p.tensor);
      if (!written || it == writer.end()) return;
      box_elements(p, b, f, [&](int64_t e) {
        int& w = it->second.at(size_t(e));
        if (w >= 0) sets.join(int(blk), w);  // two blocks write one element: one group
        w = int(blk);
      });
    });
  }
  std::vector<bool> reads_head(size_t(tail_blocks), false);
  for (int64_t blk = 0; blk < tail_blocks; ++blk) {
    const std::vector<int64_t> b = block_indices(tail.block.grid, blk);
    tensor_boxes(tail.block, [&](const kir::Place& p, int64_t f, bool written) {
      auto it = writer.find(p.tensor);
      if (written || it == writer.end()) return;
      box_elements(p, b, f, [&](int64_t e) {
        const int w = it->second.at(size_t(e));
        if (w < 0) return;
        sets.join(int(head_blocks + blk), w);
        reads_head[size_t(blk)] = true;
      });
    });
    if (!reads_head[size_t(blk)]) return std::nullopt;
  }

  TicketGroups out;
  std::map<int, int> group_of_root;
  out.group_of.assign(size_t(head_blocks), -1);
  std::vector<std::vector<int>> members;
  for (int64_t blk = 0; blk < tail_blocks; ++blk) {
    auto [it, fresh] = group_of_root.emplace(sets.find(int(head_blocks + blk)), int(members.size()));
    if (fresh) members.emplace_back();
    members[size_t(it->second)].push_back(int(blk));
  }
  out.arrivals.assign(members.size(), 0);
  for (int64_t blk = 0; blk < head_blocks; ++blk) {
    auto it = group_of_root.find(sets.find(int(blk)));
    if (it == group_of_root.end()) continue;
    out.group_of[size_t(blk)] = it->second;
    ++out.arrivals[size_t(it->second)];
  }
  if (!tail_in_launch(out.groups(), head_blocks, tail_blocks)) return std::nullopt;
  out.tail_start.push_back(0);
  for (const std::vector<int>& m : members) {
    out.tail_blocks.insert(out.tail_blocks.end(), m.begin(), m.end());
    out.tail_start.push_back(int(out.tail_blocks.size()));
  }
  return out;
}

}  // namespace prism::backend::cuda
