#include "engine/search/plan.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace prism::search {

namespace {

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[size_t(x)] != x) x = parent[size_t(x)] = parent[size_t(parent[size_t(x)])];
    return x;
  }
  void join(int a, int b) { parent[size_t(find(a))] = find(b); }
};

}  // namespace

int Indices::reduced_by(const Dag& dag, int value) const {
  const DagValue& v = dag.values[size_t(value)];
  if (is_reduction(v.op)) return of[size_t(v.operands[0])][size_t(v.axis)];
  if (v.op == Op::Matmul) {
    const auto& a = of[size_t(v.operands[0])];
    return a.back();
  }
  return -1;
}

Indices analyze_indices(const Dag& dag) {
  const Dim one(1);
  std::vector<int> offset;
  int total = 0;
  for (const DagValue& v : dag.values) {
    offset.push_back(total);
    total += int(v.type.shape.size());
  }
  UnionFind uf{size_t(total)};
  std::vector<int> reduced_axes, whole_axes;  // node ids
  auto node = [&](int v, size_t axis) { return offset[size_t(v)] + int(axis); };
  auto big = [&](int v, size_t axis) { return dag.values[size_t(v)].type.shape[axis] != one; };
  for (int i = dag.num_inputs; i < int(dag.values.size()); ++i) {
    const DagValue& v = dag.values[size_t(i)];
    const size_t r = v.type.shape.size();
    if (is_reduction(v.op)) {
      for (size_t a = 0; a < r; ++a)
        if (int(a) != v.axis && big(i, a)) uf.join(node(i, a), node(v.operands[0], a));
      reduced_axes.push_back(node(v.operands[0], size_t(v.axis)));
      continue;
    }
    if (is_data_movement(v.op)) {  // its own axis is a new class, kept whole with its operands'
      for (size_t a = 0; a < r; ++a)
        for (int o : v.operands) {
          if (int(a) == v.axis) whole_axes.push_back(node(o, a));
          else if (big(i, a) && big(o, a)) uf.join(node(i, a), node(o, a));
        }
      whole_axes.push_back(node(i, size_t(v.axis)));
      continue;
    }
    const size_t pass = v.op == Op::Matmul ? r - 2 : r;  // axes that pass through elementwise
    for (size_t a = 0; a < pass; ++a)
      for (int o : v.operands)  // a scalar operand has no axes to join
        if (dag.values[size_t(o)].type.shape.size() == r && big(i, a) && big(o, a)) uf.join(node(i, a), node(o, a));
    if (v.op == Op::Matmul) {
      int x = v.operands[0], y = v.operands[1];
      if (big(i, r - 2)) uf.join(node(i, r - 2), node(x, r - 2));
      if (big(i, r - 1)) uf.join(node(i, r - 1), node(y, r - 1));
      uf.join(node(x, r - 1), node(y, r - 2));
      reduced_axes.push_back(node(x, r - 1));
    }
  }
  Indices ix;
  std::vector<int> cls_of_root(size_t(total), -1);
  for (int v = 0; v < int(dag.values.size()); ++v) {
    std::vector<int> row;
    for (size_t a = 0; a < dag.values[size_t(v)].type.shape.size(); ++a) {
      if (!big(v, a)) {
        row.push_back(-1);
        continue;
      }
      int root = uf.find(node(v, a));
      if (cls_of_root[size_t(root)] < 0) {
        cls_of_root[size_t(root)] = ix.count();
        ix.size.push_back(dag.values[size_t(v)].type.shape[a]);
        ix.reduced.push_back(false);
        ix.whole.push_back(false);
      }
      row.push_back(cls_of_root[size_t(root)]);
    }
    ix.of.push_back(row);
  }
  for (int n : reduced_axes) {
    int c = cls_of_root[size_t(uf.find(n))];
    if (c >= 0) ix.reduced[size_t(c)] = true;
  }
  for (int n : whole_axes) {
    int c = cls_of_root[size_t(uf.find(n))];
    if (c >= 0) ix.whole[size_t(c)] = true;
  }
  return ix;
}

std::vector<Plan> enumerate_plans(const Indices& ix) {
  auto cuttable = [&](int c) { return ix.whole.empty() || !ix.whole[size_t(c)]; };
  std::vector<std::vector<int>> grids = {{}};
  for (int a = 0; a < ix.count(); ++a) {
    if (!cuttable(a)) continue;
    grids.push_back({a});
    for (int b = a + 1; b < ix.count(); ++b)
      if (cuttable(b)) grids.push_back({a, b});
  }
  std::vector<Plan> plans;
  for (const auto& g : grids) {
    plans.push_back({g, -1});
    for (int c = 0; c < ix.count(); ++c)
      if (ix.reduced[size_t(c)] && cuttable(c)) plans.push_back({g, c});
  }
  return plans;
}

}  // namespace prism::search
