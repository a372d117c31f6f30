#include "engine/ir/defer_row_scales.h"

#include <optional>
#include <string>
#include <utility>

#include "engine/ir/edit_program.h"

namespace prism {

namespace {

// The row scale of `v` as a matmul's left operand: (the scaled value, the scale), or none.
std::optional<std::pair<int, int>> row_scaled(const Program& p, const Value& v) {
  if (v.op != Op::Div && v.op != Op::Mul) return std::nullopt;
  const size_t rank = v.type.shape.size();
  auto is_scale = [&](int id) {
    const std::vector<Dim>& s = p.value(id).type.shape;
    return s.empty() || (s.size() == rank && s.back() == Dim(1));
  };
  auto full = [&](int id) { return p.value(id).type.shape == v.type.shape; };
  const int a = v.operands[0], b = v.operands[1];
  if (full(a) && is_scale(b)) return std::make_pair(a, b);
  if (v.op == Op::Mul && full(b) && is_scale(a)) return std::make_pair(b, a);
  return std::nullopt;
}

// One rewrite of the first matmul whose left operand is row-scaled; false when there is none.
bool defer_one(Program& p) {
  for (const Value& m : p.values) {
    if (m.op != Op::Matmul || m.type.shape.size() < 2) continue;
    const Value& left = p.value(m.operands[0]);
    const auto scaled = row_scaled(p, left);
    if (!scaled) continue;
    // The matmul of the unscaled value, then the scale: both appended, the old matmul's readers
    // moved to the scale (appended values keep operands before them; reordered below).
    Program q = p;  // p (and m) stay as they are unless the rewrite types
    const int product = append_value(q, Op::Matmul, {scaled->first, m.operands[1]}, m.attrs, m.pos);
    const int scale = product < 0 ? -1 : append_value(q, left.op, {product, scaled->second}, {}, m.pos);
    if (scale < 0 || !(q.value(scale).type == m.type)) return false;
    q.values[size_t(product)].name = fresh_name(q, m.name + "_unscaled");
    q.values[size_t(scale)].name = m.name;
    q.values[size_t(scale)].named = m.named;
    replace_uses(q, m.id, scale, scale);
    p = std::move(q);
    return true;
  }
  return false;
}

}  // namespace

std::optional<Program> defer_row_scales(const Program& lowered) {
  // Dead values go after each rewrite: the replaced matmul would still read the scaled operand.
  return rewrite_until_done(lowered, defer_one);
}

}  // namespace prism
