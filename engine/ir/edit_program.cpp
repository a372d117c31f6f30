#include "engine/ir/edit_program.h"

#include <functional>
#include <set>
#include <utility>

#include "engine/ir/infer_shapes.h"

namespace prism {

int append_value(Program& p, Op op, std::vector<int> operands, Attrs attrs, const SourceRange& pos, std::string* error) {
  std::vector<Type> types;
  for (int id : operands) types.push_back(p.value(id).type);
  const Inferred t = infer_type(op, attrs, types);
  if (!t.type) {
    if (error) *error = t.error;
    return -1;
  }
  Value v;
  v.id = int(p.values.size());
  v.op = op;
  v.operands = std::move(operands);
  v.attrs = std::move(attrs);
  v.type = *t.type;
  v.pos = pos;
  p.values.push_back(std::move(v));
  return p.values.back().id;
}

void replace_uses(Program& p, int from, int to, int keep) {
  for (Value& v : p.values)
    if (v.id != keep)
      for (int& o : v.operands)
        if (o == from) o = to;
  for (int& o : p.outputs)
    if (o == from) o = to;
}

void take_place(Program& p, int from, int to) {
  std::swap(p.values[size_t(to)].name, p.values[size_t(from)].name);
  std::swap(p.values[size_t(to)].named, p.values[size_t(from)].named);
  replace_uses(p, from, to);
}

namespace {

// The values of `id`'s statement: a split's parts (consecutive values), else `id` alone.
std::vector<int> statement_of(const Program& p, int id) {
  const Value& v = p.value(id);
  if (v.op != Op::Split) return {id};
  std::vector<int> parts;
  for (int i = 0; i < v.attrs.parts; ++i) parts.push_back(id - v.attrs.index + i);
  return parts;
}

}  // namespace

Program live_in_order(const Program& p) {
  std::vector<bool> live(p.values.size(), false);
  std::vector<int> stack(p.outputs.begin(), p.outputs.end());
  for (int id : p.inputs) live[size_t(id)] = true;
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (live[size_t(id)] && p.value(id).op != Op::Input) continue;
    for (int part : statement_of(p, id)) live[size_t(part)] = true;
    for (int o : p.value(id).operands) stack.push_back(o);
  }
  Program out = p;
  out.values.clear();
  std::vector<int> at(p.values.size(), -1);
  std::vector<bool> placed(p.values.size(), false);
  // Depth-first from each live value in id order: operands before the values that read them, a
  // split's parts together.
  std::function<void(int)> place = [&](int id) {
    if (placed[size_t(id)]) return;
    for (int o : p.value(id).operands) place(o);
    for (int part : statement_of(p, id)) {
      placed[size_t(part)] = true;
      Value v = p.value(part);
      v.id = int(out.values.size());
      for (int& o : v.operands) o = at[size_t(o)];
      at[size_t(part)] = v.id;
      out.values.push_back(std::move(v));
    }
  };
  for (size_t i = 0; i < p.values.size(); ++i)
    if (live[i]) place(int(i));
  for (int& id : out.inputs) id = at[size_t(id)];
  for (int& id : out.outputs) id = at[size_t(id)];
  return out;
}

std::string fresh_name(const Program& p, const std::string& base) {
  std::set<std::string> names;
  for (const Value& v : p.values) names.insert(v.name);
  std::string fresh = base;
  for (int k = 1; names.count(fresh); ++k) fresh = base + std::to_string(k);
  return fresh;
}

std::optional<Program> rewrite_until_done(const Program& p, const std::function<bool(Program&)>& rewrite_one, int limit) {
  Program q = p;
  bool changed = false;
  for (int step = 0; step < limit && rewrite_one(q); ++step) {
    q = live_in_order(q);
    changed = true;
  }
  if (!changed) return std::nullopt;
  return q;
}

}  // namespace prism
