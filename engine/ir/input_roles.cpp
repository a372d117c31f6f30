#include "engine/ir/input_roles.h"

#include <algorithm>
#include <functional>

namespace prism {

namespace {

// The input's index in parameter order, or -1 when `id` is not an input.
int input_index(const Program& p, int id) {
  auto it = std::find(p.inputs.begin(), p.inputs.end(), id);
  return it == p.inputs.end() ? -1 : int(it - p.inputs.begin());
}

bool is_const(const Program& p, int id) { return p.value(id).op == Op::Const; }

// What `id` reads through casts (autocast's bf16(W), a bf16 softmax's f32(scores)).
int uncast(const Program& p, int id) {
  while (p.value(id).op == Op::Cast) id = p.value(id).operands[0];
  return id;
}

// Inputs read as a matmul's 2-D right operand, directly or through a transpose, either under
// casts, also reshaped into it (a patch convolution's W[o, c, kh, kw] as [o, c·kh·kw]).
void mark_weights(const Program& p, InputRoles& roles) {
  for (size_t i = 0; i < p.inputs.size(); ++i) roles.weight[i] = p.value(p.inputs[i]).type.shape.size() <= 1;
  for (const Value& v : p.values) {
    if (v.op != Op::Matmul) continue;
    int b = uncast(p, v.operands[1]);
    if (p.value(b).op == Op::Transpose) b = uncast(p, p.value(b).operands[0]);
    if (p.value(b).type.shape.size() != 2) continue;
    if (p.value(b).op == Op::Reshape) b = uncast(p, p.value(b).operands[0]);
    const int i = input_index(p, b);
    if (i >= 0) roles.weight[size_t(i)] = true;
  }
}

// Inputs added to the scores a max reduces along `axis` of `scores` (through adds, scales by
// constants and casts), each along its own axis where it varies.
void mark_masks(const Program& p, int scores, int axis, InputRoles& roles) {
  const size_t rank = p.value(scores).type.shape.size();
  std::function<void(int)> walk = [&](int id) {
    const Value& v = p.value(uncast(p, id));
    if (v.op == Op::Add) {
      for (int operand : v.operands) {
        const int o = uncast(p, operand), i = input_index(p, o);
        if (i < 0) {
          walk(o);
          continue;
        }
        const std::vector<Dim>& shape = p.value(o).type.shape;
        const int at = axis - int(rank - shape.size());
        if (at >= 0 && shape[size_t(at)] != Dim(1)) roles.mask_axis[size_t(i)] = at;
      }
    } else if ((v.op == Op::Mul || v.op == Op::Div) && is_const(p, v.operands[1])) {
      walk(v.operands[0]);
    } else if (v.op == Op::Mul && is_const(p, v.operands[0])) {
      walk(v.operands[1]);
    }
  };
  walk(scores);
}

}  // namespace

InputRoles input_roles(const Program& program) {
  InputRoles roles;
  roles.weight.assign(program.inputs.size(), false);
  roles.mask_axis.assign(program.inputs.size(), -1);
  mark_weights(program, roles);
  for (const Value& v : program.values)
    if (v.op == Op::Max) mark_masks(program, v.operands[0], v.attrs.axis, roles);
  return roles;
}

}  // namespace prism
