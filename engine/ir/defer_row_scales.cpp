#include "engine/ir/defer_row_scales.h"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "engine/error.h"
#include "engine/ir/infer_shapes.h"

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
    std::set<std::string> names;
    for (const Value& v : p.values) names.insert(v.name);
    std::string fresh;
    for (int k = 0; fresh.empty() || names.count(fresh); ++k) fresh = m.name + "_unscaled" + (k ? std::to_string(k) : "");
    // The matmul of the unscaled value, then the scale: both appended, the old matmul's readers
    // moved to the scale (appended values keep operands before them; reordered below).
    Value product = m;
    product.id = int(p.values.size());
    product.name = fresh;
    product.named = false;
    product.operands = {scaled->first, m.operands[1]};
    Value scale;
    scale.id = product.id + 1;
    scale.op = left.op;
    scale.operands = {product.id, scaled->second};
    scale.name = m.name;
    scale.named = m.named;
    scale.pos = m.pos;
    Attrs attrs;
    std::vector<Type> types = {product.type, p.value(scaled->second).type};
    Inferred t = infer_type(scale.op, attrs, types);
    if (!t.type || !(*t.type == m.type)) return false;
    scale.type = *t.type;
    const int old = m.id;
    p.values.push_back(product);
    p.values.push_back(scale);
    for (Value& v : p.values)
      for (int& o : v.operands)
        if (o == old && v.id != scale.id) o = scale.id;
    for (int& o : p.outputs)
      if (o == old) o = scale.id;
    return true;
  }
  return false;
}

// The values the outputs read, in an order where operands come first, renumbered.
Program live_in_order(const Program& p) {
  std::vector<bool> live(p.values.size(), false);
  std::vector<int> stack(p.outputs.begin(), p.outputs.end());
  for (int id : p.inputs) live[size_t(id)] = true;
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (live[size_t(id)] && p.value(id).op != Op::Input) continue;
    live[size_t(id)] = true;
    for (int o : p.value(id).operands) stack.push_back(o);
  }
  Program out = p;
  out.values.clear();
  std::vector<int> at(p.values.size(), -1);
  std::vector<bool> placed(p.values.size(), false);
  // Depth-first from each live value in id order: operands before the values that read them.
  std::function<void(int)> place = [&](int id) {
    if (placed[size_t(id)]) return;
    placed[size_t(id)] = true;
    for (int o : p.value(id).operands) place(o);
    Value v = p.value(id);
    v.id = int(out.values.size());
    for (int& o : v.operands) o = at[size_t(o)];
    at[size_t(id)] = v.id;
    out.values.push_back(std::move(v));
  };
  for (size_t i = 0; i < p.values.size(); ++i)
    if (live[i]) place(int(i));
  for (int& id : out.inputs) id = at[size_t(id)];
  for (int& id : out.outputs) id = at[size_t(id)];
  return out;
}

}  // namespace

std::optional<Program> defer_row_scales(const Program& lowered) {
  Program p = lowered;
  bool changed = false;
  // Dead values go after each rewrite: the replaced matmul would still read the scaled operand.
  for (int step = 0; step < 64 && defer_one(p); ++step) {
    p = live_in_order(p);
    changed = true;
  }
  if (!changed) return std::nullopt;
  return p;
}

}  // namespace prism
