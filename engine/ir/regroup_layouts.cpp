#include "engine/ir/regroup_layouts.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

#include "engine/ir/edit_program.h"
#include "engine/ir/infer_shapes.h"

namespace prism {

namespace {

// Runs [a0, a1) of one shape and [b0, b1) of another holding the same elements.
struct Group {
  size_t a0, a1, b0, b1;
};

Dim product(const std::vector<Dim>& shape, size_t from, size_t to) {
  return element_count({shape.begin() + long(from), shape.begin() + long(to)});
}

// The shortest runs of `a` and `b`, left to right, of equal products; none where the shapes do
// not split alike. Unit axes left at the end join the last group.
std::optional<std::vector<Group>> groups(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  std::vector<Group> out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    std::optional<Group> g;
    for (size_t len = 2; !g && len <= a.size() - i + b.size() - j; ++len)
      for (size_t la = 1; !g && la < len; ++la)
        if (i + la <= a.size() && j + len - la <= b.size() && product(a, i, i + la) == product(b, j, j + len - la))
          g = Group{i, i + la, j, j + len - la};
    if (!g) return std::nullopt;
    out.push_back(*g);
    i = g->a1, j = g->b1;
  }
  if (out.empty() || product(a, i, a.size()) != Dim(1) || product(b, j, b.size()) != Dim(1)) return std::nullopt;
  out.back().a1 = a.size(), out.back().b1 = b.size();
  return out;
}

bool in_order(const std::vector<int>& axes) {
  for (size_t k = 1; k < axes.size(); ++k)
    if (axes[k] != axes[k - 1] + 1) return false;
  return true;
}

// Outer reshape into the operand: reshape(transpose(y, perm), shape) = transpose(reshape(y,
// y_shape), moved) when each group of the transpose's output reads y's axes in order.
std::optional<std::pair<std::vector<Dim>, std::vector<int>>> reshape_first(const std::vector<Dim>& y, const std::vector<int>& perm,
                                                                           const std::vector<Dim>& t, const std::vector<Dim>& shape) {
  const auto gs = groups(t, shape);
  if (!gs) return std::nullopt;
  std::vector<int> group_of(y.size(), -1);  // y's axis -> the group holding it
  for (size_t g = 0; g < gs->size(); ++g) {
    const Group& r = (*gs)[g];
    std::vector<int> axes(perm.begin() + long(r.a0), perm.begin() + long(r.a1));
    if (!in_order(axes)) return std::nullopt;
    for (int a : axes) group_of[size_t(a)] = int(g);
  }
  std::vector<Dim> y_shape;
  std::vector<std::vector<int>> placed(gs->size());  // [group] its axes in y_shape
  for (size_t a = 0; a < y.size(); ++a) {
    const Group& r = (*gs)[size_t(group_of[a])];
    if (int(a) != perm[r.a0]) continue;  // the group's first axis places all of it
    for (size_t k = r.b0; k < r.b1; ++k) {
      placed[size_t(group_of[a])].push_back(int(y_shape.size()));
      y_shape.push_back(shape[k]);
    }
  }
  std::vector<int> moved;
  for (const std::vector<int>& axes : placed) moved.insert(moved.end(), axes.begin(), axes.end());
  return std::make_pair(y_shape, moved);
}

// Inner reshape out of the transpose: transpose(reshape(o, split), perm) = reshape(transpose(o,
// moved), ...) when each group of `split` stays together and in order under perm.
std::optional<std::vector<int>> transpose_first(const std::vector<Dim>& o, const std::vector<Dim>& split, const std::vector<int>& perm) {
  const auto gs = groups(o, split);
  if (!gs) return std::nullopt;
  std::vector<int> at(perm.size());  // split's axis -> its place under perm
  for (size_t k = 0; k < perm.size(); ++k) at[size_t(perm[k])] = int(k);
  std::vector<std::pair<int, size_t>> order;  // (place of the group's first axis, group)
  for (size_t g = 0; g < gs->size(); ++g) {
    std::vector<int> places(at.begin() + long((*gs)[g].b0), at.begin() + long((*gs)[g].b1));
    if (!in_order(places)) return std::nullopt;
    order.emplace_back(places.front(), g);
  }
  std::sort(order.begin(), order.end());
  std::vector<int> moved;
  for (const auto& [place, g] : order)
    for (size_t a = (*gs)[g].a0; a < (*gs)[g].a1; ++a) moved.push_back(int(a));
  return moved;
}

// The first reshape(transpose(reshape(x))) whose inner links have one reader each, rewritten.
bool regroup_one(Program& p) {
  std::vector<int> readers(p.values.size(), 0);
  for (const Value& v : p.values)
    for (int o : v.operands) ++readers[size_t(o)];
  for (int o : p.outputs) ++readers[size_t(o)];
  for (const Value& outer : p.values) {
    if (outer.op != Op::Reshape) continue;
    const Value& t = p.value(outer.operands[0]);
    if (t.op != Op::Transpose || readers[size_t(t.id)] != 1) continue;
    const Value& inner = p.value(t.operands[0]);
    if (inner.op != Op::Reshape || readers[size_t(inner.id)] != 1) continue;
    const int x = inner.operands[0], id = outer.id;
    const std::vector<Dim> shape = outer.type.shape;
    const SourceRange pos = outer.pos;  // appending moves the values
    Attrs first, then;
    Op first_op = Op::Reshape, then_op = Op::Transpose;
    if (auto r = reshape_first(inner.type.shape, t.attrs.perm, t.type.shape, shape)) {
      first.shape = r->first;
      then.perm = r->second;
    } else if (auto moved = transpose_first(p.value(x).type.shape, inner.type.shape, t.attrs.perm)) {
      std::swap(first_op, then_op);
      first.perm = *moved;
      then.shape = shape;
    } else {
      continue;
    }
    const int step = append_value(p, first_op, {x}, first, pos);
    p.values[size_t(step)].name = fresh_name(p, "t");
    const int replacement = append_value(p, then_op, {step}, then, pos);
    if (step < 0 || replacement < 0) throw std::logic_error("regroup_layouts: a regrouped layout does not type");
    take_place(p, id, replacement);
    return true;
  }
  return false;
}

}  // namespace

Program regroup_layouts(const Program& lowered) { return rewrite_until_done(lowered, regroup_one).value_or(lowered); }

}  // namespace prism
