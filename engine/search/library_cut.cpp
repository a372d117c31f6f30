#include "engine/search/library_cut.h"

#include <tuple>

#include "engine/search/dag.h"

namespace prism::search {

namespace {

// How the library matmul reads operand `v`: an input as it is, or through its view (a transpose
// or a unit-dim reshape of an input); none when v is computed.
std::optional<std::pair<std::string, std::vector<int>>> read_in_place(const Program& p, const Value& v) {
  if (v.op == Op::Input) return std::make_pair(v.name, std::vector<int>{});
  if (auto view = input_view(p, v)) return std::make_pair(viewed_input(p, v).name, *view);
  return std::nullopt;
}

std::string operand_text(const std::string& name, const std::vector<int>& view) {
  if (view.size() >= 2 && view[view.size() - 1] == int(view.size()) - 2 && view[view.size() - 2] == int(view.size()) - 1)
    return name + "^T";
  return name;
}

}  // namespace

Program extract_program(const Program& p, const std::vector<int>& outputs, const std::vector<int>& as_inputs, const std::string& name) {
  const size_t n = p.values.size();
  std::vector<bool> need(n, false), cut(n, false);
  for (int id : as_inputs) cut[size_t(id)] = true;
  std::vector<int> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    if (need[size_t(v)]) continue;
    need[size_t(v)] = true;
    if (cut[size_t(v)]) continue;
    for (int o : p.value(v).operands) stack.push_back(o);
    // A split's parts are one statement (consecutive values): a part needs its siblings.
    const Value& x = p.value(v);
    if (x.op == Op::Split)
      for (int i = 0; i < x.attrs.parts; ++i) stack.push_back(v - x.attrs.index + i);
  }
  Program out;
  out.name = name;
  out.file = p.file;
  out.pos = p.pos;
  out.dims = p.dims;
  std::vector<int> map(n, -1);
  auto add = [&](Value v) {
    v.id = int(out.values.size());
    out.values.push_back(std::move(v));
    return out.values.back().id;
  };
  for (int id : p.inputs)
    if (need[size_t(id)]) out.inputs.push_back(map[size_t(id)] = add(p.value(id)));
  for (int id : as_inputs) {
    if (!need[size_t(id)] || map[size_t(id)] >= 0) continue;
    Value in = p.value(id);
    in.op = Op::Input;
    in.operands.clear();
    in.attrs = Attrs{};
    in.named = true;
    out.inputs.push_back(map[size_t(id)] = add(std::move(in)));
  }
  for (const Value& v : p.values) {
    if (!need[size_t(v.id)] || map[size_t(v.id)] >= 0) continue;
    Value copy = v;
    for (int& o : copy.operands) o = map[size_t(o)];
    map[size_t(v.id)] = add(std::move(copy));
  }
  for (int id : outputs) out.outputs.push_back(map[size_t(id)]);
  return out;
}

std::vector<LibraryCut> library_cuts(const Program& p) {
  std::vector<LibraryCut> cuts;
  if (p.outputs.size() != 1) return cuts;
  for (const Value& m : p.values) {
    if (m.op != Op::Matmul || m.operands.size() != 2) continue;
    // A weight: a 2-D input, read in place. (Batched matmuls of computed values, attention's, are
    // what the fused attention kernels do better.)
    const auto right = read_in_place(p, p.value(m.operands[1]));
    if (!right || p.value(m.operands[1]).type.shape.size() != 2) continue;
    LibraryCut cut;
    cut.matmul = m.id;
    cut.product = m.name;
    std::tie(cut.right, cut.right_view) = *right;
    const Value& a = p.value(m.operands[0]);
    std::vector<int> epilogue_inputs = {m.id};
    if (const auto left = read_in_place(p, a)) {
      std::tie(cut.left, cut.left_view) = *left;
    } else {
      cut.left = a.name;
      cut.prologue = extract_program(p, {a.id}, {}, p.name + "_prologue");
      // An epilogue that uses the left operand too (an RMSNorm's rows projected twice) reads the
      // prologue's, not a second computation of it: its own cut then needs no prologue.
      epilogue_inputs.push_back(a.id);
    }
    if (p.outputs[0] != m.id) cut.epilogue = extract_program(p, p.outputs, epilogue_inputs, p.name + "_epilogue");
    if (!cut.prologue && !cut.epilogue) continue;
    cut.text = m.name + " = matmul(" + operand_text(cut.left, cut.left_view) + ", " + operand_text(cut.right, cut.right_view) + ")";
    cut.text += " at " + std::to_string(m.pos.begin.line) + ":" + std::to_string(m.pos.begin.col);
    cuts.push_back(std::move(cut));
  }
  return cuts;
}

}  // namespace prism::search
