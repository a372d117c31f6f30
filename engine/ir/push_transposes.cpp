#include "engine/ir/push_transposes.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "engine/ir/edit_program.h"
#include "engine/ir/infer_shapes.h"

namespace prism {

namespace {

std::vector<Dim> permuted(const std::vector<Dim>& shape, const std::vector<int>& perm) {
  std::vector<Dim> out;
  for (int p : perm) out.push_back(shape.at(size_t(p)));
  return out;
}

class Pusher {
 public:
  explicit Pusher(const Program& p) : p_(p) {}

  Program run() {
    // Which transposes move (their operand can be rewritten), then which values are still read.
    std::vector<bool> moved(p_.values.size(), false);
    for (const Value& v : p_.values)
      if (v.op == Op::Transpose && p_.value(v.operands[0]).op != Op::Input && movable(v.operands[0], v.attrs.perm)) moved[size_t(v.id)] = true;
    for (const Value& v : p_.values) names_.insert(v.name);
    std::vector<bool> live(p_.values.size(), false);
    for (int o : p_.outputs) live[size_t(o)] = true;
    for (size_t i = p_.values.size(); i-- > 0;)
      if (live[i] && !moved[i])
        for (int o : p_.values[i].operands) live[size_t(o)] = true;
    // A moved transpose reads, through the rewrite, the inputs and constants under it.
    for (size_t i = 0; i < p_.values.size(); ++i)
      if (live[i] && moved[i]) mark_leaves(p_.values[i].operands[0], live);

    out_ = p_;
    out_.values.clear();
    out_.inputs.clear();
    out_.outputs.clear();
    for (const Value& v : p_.values) {
      if (!live[size_t(v.id)]) continue;
      if (moved[size_t(v.id)]) {
        const int id = pushed(v.operands[0], v.attrs.perm);
        // The transpose's own name, type and position go to the value that now computes it.
        Value& w = out_.values[size_t(id)];
        if (v.named || w.name.empty()) w.name = v.name, w.named = v.named;
        at_[v.id] = id;
        continue;
      }
      Value w = v;
      for (int& o : w.operands) o = at_.at(o);
      at_[v.id] = add(std::move(w));
      if (v.op == Op::Input) out_.inputs.push_back(at_[v.id]);
    }
    for (int o : p_.outputs) out_.outputs.push_back(at_.at(o));
    return std::move(out_);
  }

 private:
  // Whether transpose(perm) of value `id` can be moved down to the inputs.
  bool movable(int id, const std::vector<int>& perm) const {
    const Value& v = p_.value(id);
    const size_t r = perm.size();
    switch (op_class(v.op)) {
      case OpClass::Const: return true;
      case OpClass::Input: return v.type.shape.size() == r || keeps_order(v.type.shape.size(), perm);
      case OpClass::Unary: return v.type.shape.size() == r && movable(v.operands[0], perm);
      case OpClass::Binary:
        if (v.type.shape.size() != r) return false;
        for (int o : v.operands) {
          const size_t ro = p_.value(o).type.shape.size();
          if (ro == 0) continue;
          if (ro != r && p_.value(o).op != Op::Input) return false;
          if (!movable(o, perm)) return false;
        }
        return true;
      case OpClass::Reduce: return v.attrs.keepdims && v.type.shape.size() == r && movable(v.operands[0], perm);
      default: return false;
    }
  }

  // An input of rank `rank` < perm's, read with leading unit dims: its dims keep their order
  // under perm (then the transposed read is a reshape).
  static bool keeps_order(size_t rank, const std::vector<int>& perm) {
    const int lead = int(perm.size() - rank);
    int last = -1;
    for (int p : perm)
      if (p >= lead) {
        if (p < last) return false;
        last = p;
      }
    return true;
  }

  void mark_leaves(int id, std::vector<bool>& live) const {
    const Value& v = p_.value(id);
    if (v.op == Op::Input || v.op == Op::Const) {
      live[size_t(id)] = true;
      return;
    }
    for (int o : v.operands) mark_leaves(o, live);
  }

  int add(Value v) {
    v.id = int(out_.values.size());
    out_.values.push_back(std::move(v));
    return out_.values.back().id;
  }

  // A new value computing transpose(perm) of value `id` from the rewritten operands.
  int pushed(int id, const std::vector<int>& perm) {
    auto key = std::make_pair(id, perm);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    const Value& v = p_.value(id);
    const size_t r = perm.size();
    Value w;
    w.op = v.op;
    w.type = v.type;
    w.pos = v.pos;
    if (v.op == Op::Const) return at_.at(id);
    for (size_t k = p_.values.size() + out_.values.size(); w.name.empty() || names_.count(w.name); ++k) w.name = std::string("t").append(std::to_string(k));  // append: GCC 12's -Wrestrict misfires on "t" + s
    names_.insert(w.name);
    if (v.op == Op::Input) {
      std::vector<Dim> shape = v.type.shape;
      shape.insert(shape.begin(), r - shape.size(), Dim(1));
      w.type.shape = permuted(shape, perm);
      w.operands = {at_.at(id)};
      if (v.type.shape.size() == r) {
        w.op = Op::Transpose;
        w.attrs.perm = perm;
      } else {
        w.op = Op::Reshape;
        w.attrs.shape = w.type.shape;
      }
    } else {
      w.type.shape = permuted(v.type.shape, perm);
      w.attrs = v.attrs;
      if (op_class(v.op) == OpClass::Reduce)
        for (size_t j = 0; j < r; ++j)
          if (perm[j] == v.attrs.axis) w.attrs.axis = int(j);
      for (int o : v.operands) w.operands.push_back(p_.value(o).type.shape.empty() ? at_.at(o) : pushed(o, perm));
    }
    const int out = add(std::move(w));
    memo_[key] = out;
    return out;
  }

  const Program& p_;
  Program out_;
  std::map<int, int> at_;  // old id -> new id
  std::map<std::pair<int, std::vector<int>>, int> memo_;
  std::set<std::string> names_;  // taken value names
};

// A transpose of a transpose as one transpose of the first's operand (header); where the two
// cancel, its readers read that operand (not for an output, which keeps its value).
Program compose_transposes(const Program& lowered) {
  Program p = lowered;
  bool any = false;
  for (Value& v : p.values) {  // in definition order: a chain of three composes step by step
    if (v.op != Op::Transpose || p.value(v.operands[0]).op != Op::Transpose) continue;
    const Value& inner = p.value(v.operands[0]);
    std::vector<int> perm;
    for (int i : v.attrs.perm) perm.push_back(inner.attrs.perm.at(size_t(i)));
    v.operands[0] = inner.operands[0];
    v.attrs.perm = perm;
    any = true;
  }
  if (!any) return lowered;
  for (const Value& v : p.values) {
    if (v.op != Op::Transpose || std::find(p.outputs.begin(), p.outputs.end(), v.id) != p.outputs.end()) continue;
    bool identity = true;
    for (size_t i = 0; i < v.attrs.perm.size(); ++i) identity = identity && v.attrs.perm[i] == int(i);
    if (identity) replace_uses(p, v.id, v.operands[0]);
  }
  return live_in_order(p);
}

// A transpose of a reshape that adds unit dims to an input, as that reshape of a transpose of
// the input (header): the first such, rewritten.
bool transpose_under_unit_reshape(Program& p) {
  for (const Value& v : p.values) {
    if (v.op != Op::Transpose || p.value(v.operands[0]).op != Op::Reshape) continue;
    const Value& r = p.value(v.operands[0]);
    const Value& x = p.value(r.operands[0]);
    const std::optional<std::vector<int>> view = x.op == Op::Input ? unit_axes_added(x.type.shape, r.type.shape) : std::nullopt;
    if (!view) continue;
    std::vector<int> perm;  // the input's axes in the order the transpose reads them
    for (int a : v.attrs.perm)
      if ((*view)[size_t(a)] >= 0) perm.push_back((*view)[size_t(a)]);
    const int id = v.id, input = x.id;
    const std::vector<Dim> shape = v.type.shape;
    const SourceRange pos = v.pos;  // appending moves the values
    int under = input;
    if (!std::is_sorted(perm.begin(), perm.end())) {
      Attrs a;
      a.perm = perm;
      under = append_value(p, Op::Transpose, {input}, a, pos);
      p.values[size_t(under)].name = fresh_name(p, "t");
    }
    Attrs b;
    b.shape = shape;
    const int reshaped = append_value(p, Op::Reshape, {under}, b, pos);
    take_place(p, id, reshaped);
    return true;
  }
  return false;
}

}  // namespace

Program push_transposes(const Program& given) {
  const Program lowered = compose_transposes(rewrite_until_done(given, transpose_under_unit_reshape).value_or(given));
  bool any = false;
  for (const Value& v : lowered.values) any = any || (v.op == Op::Transpose && lowered.value(v.operands[0]).op != Op::Input);
  return any ? Pusher(lowered).run() : lowered;
}

}  // namespace prism
