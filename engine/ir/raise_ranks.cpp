#include "engine/ir/raise_ranks.h"

#include <map>

#include "engine/ir/edit_program.h"

namespace prism {

namespace {

// Whether value `id` is computed by elementwise ops from inputs and scalar constants only.
bool elementwise_of_inputs(const Program& p, int id) {
  const Value& v = p.value(id);
  if (v.op == Op::Input || v.op == Op::Const) return true;
  if (!is_elementwise(v.op)) return false;
  for (int o : v.operands)
    if (!elementwise_of_inputs(p, o)) return false;
  return true;
}

// Value `id` at rank `rank`: inputs reshaped with leading unit dims, ops appended anew (`done`
// keeps what is already raised). -1 when an op does not type.
int raised(Program& p, int id, size_t rank, std::map<int, int>& done) {
  if (auto it = done.find(id); it != done.end()) return it->second;
  const Value v = p.value(id);
  int out = id;
  if (v.op == Op::Input && !v.type.shape.empty() && v.type.shape.size() < rank) {
    Attrs attrs;
    attrs.shape.assign(rank - v.type.shape.size(), Dim(1));
    attrs.shape.insert(attrs.shape.end(), v.type.shape.begin(), v.type.shape.end());
    out = append_value(p, Op::Reshape, {id}, attrs, v.pos);
    if (out >= 0) p.values[size_t(out)].name = fresh_name(p, v.name + "_raised");
  } else if (v.op != Op::Input && v.op != Op::Const) {
    std::vector<int> operands;
    for (int o : v.operands) {
      operands.push_back(raised(p, o, rank, done));
      if (operands.back() < 0) return -1;
    }
    out = append_value(p, v.op, operands, v.attrs, v.pos);
    if (out >= 0) p.values[size_t(out)].name = fresh_name(p, v.name.empty() ? "raised" : v.name + "_raised");
  }
  return done[id] = out;
}

// One rewrite of the first elementwise binary op that reads a lower-rank computed operand.
bool raise_one(Program& p) {
  for (const Value& v : p.values) {
    if (op_class(v.op) != OpClass::Binary) continue;
    const size_t rank = v.type.shape.size();
    for (size_t k = 0; k < 2; ++k) {
      const Value& operand = p.value(v.operands[k]);
      const size_t r = operand.type.shape.size();
      if (r == 0 || r >= rank || operand.op == Op::Input || !elementwise_of_inputs(p, operand.id)) continue;
      Program q = p;
      std::map<int, int> done;
      const int id = raised(q, operand.id, rank, done);
      if (id < 0) continue;
      q.values[size_t(v.id)].operands[k] = id;
      p = std::move(q);
      return true;
    }
  }
  return false;
}

}  // namespace

Program raise_ranks(const Program& lowered) { return rewrite_until_done(lowered, raise_one).value_or(lowered); }

}  // namespace prism
