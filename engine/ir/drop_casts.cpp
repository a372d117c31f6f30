#include "engine/ir/drop_casts.h"

#include <algorithm>

#include "engine/ir/edit_program.h"

namespace prism {

namespace {

bool is_output(const Program& p, int id) { return std::find(p.outputs.begin(), p.outputs.end(), id) != p.outputs.end(); }

// Whether only casts read value `id` (the program does not return it either).
bool only_casts_read(const Program& p, int id) {
  if (is_output(p, id)) return false;
  for (const Value& v : p.values)
    if (v.op != Op::Cast && std::find(v.operands.begin(), v.operands.end(), id) != v.operands.end()) return false;
  return true;
}

}  // namespace

Program drop_casts(const Program& lowered) {
  if (std::none_of(lowered.values.begin(), lowered.values.end(), [](const Value& v) { return v.op == Op::Cast; })) return lowered;
  Program p = lowered;
  for (size_t i = 0; i < p.values.size(); ++i) {
    if (p.values[i].op != Op::Cast) continue;
    const int cast = int(i), x = p.values[i].operands.at(0);
    Value& operand = p.values[size_t(x)];
    const bool retype = operand.op != Op::Input && operand.op != Op::Const && only_casts_read(p, x);
    if (retype) {
      operand.type.dtype = p.values[i].type.dtype;
      if (!operand.named) {  // what the program calls it (mu = mean(X) is a cast of the division)
        operand.name = p.values[i].name;
        operand.named = p.values[i].named;
      }
    }
    else if (is_output(p, cast) && operand.type.dtype != p.values[i].type.dtype) continue;
    replace_uses(p, cast, x);
  }
  return live_in_order(p);
}

}  // namespace prism
