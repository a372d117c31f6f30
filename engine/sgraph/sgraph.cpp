#include "engine/sgraph/sgraph.h"

#include <algorithm>

#include "engine/error.h"

namespace prism::sgraph {

namespace {

void add_once(std::vector<std::string>& list, const std::string& name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

Choice concretize(const Choice& c, const ChoiceAssignment& assignment) {
  if (!c.symbolic()) return c;
  auto it = assignment.find(c.var);
  if (it == assignment.end()) throw Error(Error::Kind::InvalidArgument, "no value for map choice variable ?" + c.var);
  return Choice::of(it->second);
}

void add_symbols(std::vector<std::string>& list, const Dim& d) {
  for (const std::string& s : d.symbols()) add_once(list, s);
}

}  // namespace

const char* acc_name(AccKind kind) {
  switch (kind) {
    case AccKind::Sum: return "sum_accumulate";
    case AccKind::Max: return "max_accumulate";
    case AccKind::Rms: return "rms_accumulate";
    case AccKind::Rescaled: return "rescaled_sum_accumulate";
  }
  return "?";
}

std::optional<AccKind> acc_from_name(const std::string& name) {
  for (AccKind k : {AccKind::Sum, AccKind::Max, AccKind::Rms, AccKind::Rescaled})
    if (name == acc_name(k)) return k;
  return std::nullopt;
}

std::vector<Dim> view_shape(const std::vector<Dim>& shape, const std::vector<int>& view) {
  if (view.empty()) return shape;
  std::vector<int> seen(shape.size(), 0);
  for (int a : view) {
    if (a == BlockOp::kNewAxis) continue;
    if (a < 0 || a >= int(shape.size()) || seen[size_t(a)]++)
      throw Error(Error::Kind::InvalidArgument, "view " + view_text(view) + " must read each of the tensor's " + std::to_string(shape.size()) +
                                                    " dims once");
  }
  if (std::count(seen.begin(), seen.end(), 1) != long(shape.size()))
    throw Error(Error::Kind::InvalidArgument, "view " + view_text(view) + " must read each of the tensor's " + std::to_string(shape.size()) + " dims once");
  return view_dims(shape, view, Dim(1));
}

std::vector<int> inverse_view(const std::vector<int>& view) {
  std::vector<int> inverse(view.size(), 0);
  for (size_t i = 0; i < view.size(); ++i) inverse.at(size_t(view[i])) = int(i);
  return inverse;
}

std::string view_text(const std::vector<int>& view) {
  if (view.empty()) return "";
  std::string s = "[";
  for (size_t i = 0; i < view.size(); ++i) s += (i ? ", " : "") + (view[i] == BlockOp::kNewAxis ? std::string("-") : std::to_string(view[i]));
  return s + "]";
}

bool Map::is_concrete() const {
  return !loop.symbolic() && std::none_of(grid.begin(), grid.end(), [](const Choice& c) { return c.symbolic(); });
}

std::vector<std::string> Map::variables() const {
  std::vector<std::string> out;
  for (const Choice& c : grid)
    if (c.symbolic()) add_once(out, c.var);
  if (loop.symbolic()) add_once(out, loop.var);
  return out;
}

Map Map::concretized(const ChoiceAssignment& assignment) const {
  Map out;
  for (const Choice& c : grid) out.grid.push_back(concretize(c, assignment));
  out.loop = concretize(loop, assignment);
  return out;
}

bool SGraph::is_concrete() const { return variables().empty(); }

std::vector<std::string> SGraph::variables() const {
  std::vector<std::string> out;
  for (const Kernel& k : kernels) {
    if (!k.custom) continue;
    for (const BlockOp& op : k.block.ops)
      if (op.kind == BlockOp::Kind::Load || op.kind == BlockOp::Kind::Save)
        for (const std::string& v : op.map.variables()) add_once(out, v);
  }
  return out;
}

SGraph SGraph::concretized(const ChoiceAssignment& assignment) const {
  SGraph out = *this;
  for (Kernel& k : out.kernels) {
    if (!k.custom) continue;
    for (BlockOp& op : k.block.ops)
      if (op.kind == BlockOp::Kind::Load || op.kind == BlockOp::Kind::Save) op.map = op.map.concretized(assignment);
  }
  return out;
}

std::vector<std::string> SGraph::parameters() const {
  std::vector<std::string> out;
  for (const Parameter& p : parameter_roles()) out.push_back(p.name);
  return out;
}

std::vector<SGraph::Parameter> SGraph::parameter_roles() const {
  std::vector<std::string> seen;
  std::vector<Parameter> out;
  auto add = [&](const Dim& d, Parameter::Role role) {
    const size_t before = seen.size();
    add_symbols(seen, d);
    for (size_t i = before; i < seen.size(); ++i) out.push_back({seen[i], role});
  };
  for (const Kernel& k : kernels) {
    if (!k.custom) continue;
    for (const Dim& g : k.block.grid) add(g, Parameter::Role::Grid);
    if (k.block.loop) add(*k.block.loop, Parameter::Role::Loop);
  }
  return out;
}

const std::vector<int>& LibraryKernel::view(size_t i) const {
  static const std::vector<int> identity;
  return i < views.size() ? views[i] : identity;
}

std::vector<std::string> kernel_inputs(const Kernel& kernel) {
  std::vector<std::string> out;
  if (!kernel.custom) {
    for (const std::string& s : kernel.library.inputs) add_once(out, s);
    return out;
  }
  for (const BlockOp& op : kernel.block.ops)
    if (op.kind == BlockOp::Kind::Load) add_once(out, op.tensor);
  return out;
}

std::vector<std::string> kernel_outputs(const Kernel& kernel) {
  if (!kernel.custom) return {kernel.library.output};
  std::vector<std::string> out;
  for (const BlockOp& op : kernel.block.ops)
    if (op.kind == BlockOp::Kind::Save) add_once(out, op.name);
  return out;
}

bool shifts_by_own_max(const CustomKernel& kernel, size_t i) {
  const BlockOp& op = kernel.ops.at(i);
  if (op.kind != BlockOp::Kind::Compute || op.op != Op::Sub || op.operands.size() != 2) return false;
  const BlockOp& m = kernel.ops.at(size_t(op.operands[1]));
  return m.kind == BlockOp::Kind::Compute && m.op == Op::Max && m.operands.size() == 1 && m.operands[0] == op.operands[0];
}

}  // namespace prism::sgraph
