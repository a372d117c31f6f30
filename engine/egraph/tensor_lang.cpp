#include "engine/egraph/tensor_lang.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "engine/ir/print.h"

namespace prism::eg {

namespace {

// The operators of terms alone, from TOp::Unsqueeze on.
struct TermOnly {
  const char* name;
  uint8_t arity;
};

constexpr TermOnly kTermOnly[] = {
    {"unsqueeze", 1}, {"squeeze", 1}, {"splitax", 1}, {"partition", 1}, {"replicate", 1}, {"combine", 1}, {"reduce", 1},
};
static_assert(size_t(TOp::Unsqueeze) + std::size(kTermOnly) == size_t(TOp::Count));

// IR ops that are terms: everything but the composites, which are lowered before.
bool term_of_ir(size_t code) { return code < kOpCount && op_class(Op(code)) != OpClass::Composite; }

[[noreturn]] void ill(const std::string& what) { throw std::logic_error("ill-shaped tensor term: " + what); }

}  // namespace

std::optional<Op> ir_op(TOp op) {
  if (!term_of_ir(size_t(op))) return std::nullopt;
  return Op(uint8_t(op));
}

std::vector<TOp> term_ops(OpClass cls) {
  std::vector<TOp> out;
  for (Op op : ops_of_class(cls)) out.push_back(term_op(op));
  return out;
}

const char* top_name(TOp op) {
  if (std::optional<Op> ir = ir_op(op)) return op_name(*ir);
  return kTermOnly[size_t(op) - size_t(TOp::Unsqueeze)].name;
}

uint8_t top_arity(TOp op) {
  if (op == TOp::Concat) return 2;
  if (std::optional<Op> ir = ir_op(op)) return uint8_t(op_info(*ir).arity);
  return kTermOnly[size_t(op) - size_t(TOp::Unsqueeze)].arity;
}

bool is_unary(TOp op) { return term_of_ir(size_t(op)) && op_class(Op(uint8_t(op))) == OpClass::Unary; }
bool is_binary(TOp op) { return term_of_ir(size_t(op)) && op_class(Op(uint8_t(op))) == OpClass::Binary; }

bool resolve_top(const std::string& name, uint8_t& op, uint8_t& arity) {
  for (size_t i = 0; i < size_t(TOp::Count); ++i)
    if ((term_of_ir(i) || i >= size_t(TOp::Unsqueeze)) && name == top_name(TOp(i))) {
      op = uint8_t(i);
      arity = top_arity(TOp(i));
      return true;
    }
  return false;
}

TensorGraph::TensorGraph() : graph_(this) {
  dim_id(Dim(1));  // id 0 is the size 1
}

DimId TensorGraph::dim_id(const Dim& d) {
  auto [it, fresh] = dim_ids_.try_emplace(d.canonical(), DimId(dims_.size()));
  if (fresh) dims_.push_back(d);
  return it->second;
}

uint32_t TensorGraph::shape_id(const Shape& s) {
  auto [it, fresh] = shape_ids_.try_emplace(s, uint32_t(shapes_.size()));
  if (fresh) shapes_.push_back(s);
  return it->second;
}

Id TensorGraph::input(const std::string& name, const std::vector<Dim>& shape) {
  Shape s;
  for (const Dim& d : shape) s.push_back(dim_id(d));
  uint32_t sid = shape_id(s);
  auto [it, fresh] = input_ids_.try_emplace({name, sid}, uint32_t(inputs_.size()));
  if (fresh) inputs_.push_back({name, sid});
  return graph_.add(ENode{uint8_t(TOp::Input), 0, 0, it->second, {kNoId, kNoId}});
}

namespace {

// x as num / 2^k with k <= 30 and |num| < 2^40, when it is exactly that.
std::optional<Rational> short_dyadic(double x) {
  if (!std::isfinite(x)) return std::nullopt;
  for (int k = 0; k <= 30; ++k) {
    const double scaled = std::ldexp(x, k);
    if (std::fabs(scaled) >= 0x1p40) return std::nullopt;
    if (scaled == std::trunc(scaled)) return Rational(int64_t(scaled), int64_t(1) << k);
  }
  return std::nullopt;
}

}  // namespace

Id TensorGraph::constant(const Constant& given) {
  Constant c = given;
  if (!c.exact)
    if (auto r = short_dyadic(c.number)) c.exact = Dim::constant(*r);
  std::string key;
  if (c.exact) {
    // A constant written as a division by a dim that may be zero is not the number it folds to
    // ((d-7)/(d-7) is no 1 at d = 7, ir/dim.h): its divisors are part of its key.
    key = "x:" + c.exact->canonical();
    for (const Dim& d : c.exact->zero_divisors()) key += " /" + d.canonical();
  } else {
    uint64_t bits;
    std::memcpy(&bits, &c.number, sizeof bits);
    key = "n:" + std::to_string(bits);
  }
  auto [it, fresh] = const_ids_.try_emplace(key, uint32_t(consts_.size()));
  if (fresh) consts_.push_back(c);
  return graph_.add(ENode{uint8_t(TOp::Const), 0, 0, it->second, {kNoId, kNoId}});
}

Id TensorGraph::op(TOp o, const std::vector<Id>& kids, int axis, uint32_t payload) {
  if (kids.size() != top_arity(o)) throw std::logic_error(std::string("wrong arity for ") + top_name(o));
  ENode n{uint8_t(o), uint8_t(kids.size()), int16_t(axis), payload, {kNoId, kNoId}};
  for (size_t i = 0; i < kids.size(); ++i) n.child[i] = kids[i];
  return graph_.add(n);
}

Id TensorGraph::transpose(const std::vector<int>& perm, Id x) {
  auto [it, fresh] = perm_ids_.try_emplace(perm, uint32_t(perms_.size()));
  if (fresh) perms_.push_back(perm);
  return op(TOp::Transpose, {x}, 0, it->second);
}

Id TensorGraph::reshape(const std::vector<Dim>& shape, Id x) {
  Shape s;
  for (const Dim& d : shape) s.push_back(dim_id(d));
  return op(TOp::Reshape, {x}, 0, shape_id(s));
}

DimId TensorGraph::dim_at(Id id, int axis, size_t out_rank) const {
  const Shape& s = shape_of(id);
  int offset = int(out_rank) - int(s.size());
  int i = axis - offset;
  if (i < 0 || i >= int(s.size())) return one();
  return s[size_t(i)];
}

std::vector<Dim> TensorGraph::dims_of(Id id) const {
  std::vector<Dim> out;
  for (DimId d : shape_of(id)) out.push_back(dims_[d]);
  return out;
}

std::string TensorGraph::shape_text(uint32_t shape) const {
  std::vector<Dim> ds;
  for (DimId d : shapes_[shape]) ds.push_back(dims_[d]);
  return shape_str(ds);
}

Shape TensorGraph::infer(const ENode& n) const {
  const TOp o = TOp(n.op);
  auto kid = [&](int i) -> const Shape& { return shape_of(n.child[i]); };
  auto check_axis = [&](const Shape& s, int axis, size_t extra = 0) {
    if (axis < 0 || size_t(axis) >= s.size() + extra) ill(std::string(top_name(o)) + " axis " + std::to_string(axis) + " out of range");
  };
  // Dims are interned, but computing new ones needs a mutable table: const_cast is confined here.
  auto* self = const_cast<TensorGraph*>(this);
  switch (o) {
    case TOp::Input: return shapes_[inputs_[n.payload].shape];
    case TOp::Const: return {};
    case TOp::Matmul: {
      const Shape &a = kid(0), &b = kid(1);
      if (a.size() < 2 || b.size() < 2) ill("matmul needs rank >= 2");
      if (a[a.size() - 1] != b[b.size() - 2]) ill("matmul contraction sizes differ");
      size_t r = std::max(a.size(), b.size());
      Shape out(r);
      for (size_t i = 0; i + 2 < r; ++i) {
        DimId da = dim_at(n.child[0], int(i), r), db = dim_at(n.child[1], int(i), r);
        if (da == db || db == one()) out[i] = da;
        else if (da == one()) out[i] = db;
        else ill("matmul batch dims do not broadcast");
      }
      out[r - 2] = a[a.size() - 2];
      out[r - 1] = b[b.size() - 1];
      return out;
    }
    case TOp::Sum: case TOp::Max: case TOp::Rms: {
      Shape s = kid(0);
      check_axis(s, n.axis);
      s[size_t(n.axis)] = one();
      return s;
    }
    case TOp::Unsqueeze: {
      Shape s = kid(0);
      check_axis(s, n.axis, 1);
      s.insert(s.begin() + n.axis, one());
      return s;
    }
    case TOp::Squeeze: {
      Shape s = kid(0);
      check_axis(s, n.axis);
      if (s[size_t(n.axis)] != one()) ill("squeeze of an axis that is not 1");
      s.erase(s.begin() + n.axis);
      return s;
    }
    case TOp::SplitAx: {
      Shape s = kid(0);
      check_axis(s, n.axis);
      DimId k = s[size_t(n.axis)];
      s[size_t(n.axis)] = self->dim_id(dims_[k] / dims_[n.payload]);
      s.insert(s.begin() + n.axis, DimId(n.payload));
      return s;
    }
    case TOp::Transpose: {
      const Shape& x = kid(0);
      const auto& perm = perms_[n.payload];
      if (perm.size() != x.size()) ill("transpose rank");
      Shape s;
      for (int p : perm) s.push_back(x[size_t(p)]);
      return s;
    }
    case TOp::Reshape: return shapes_[n.payload];
    case TOp::Concat: {
      Shape s = kid(0);
      const Shape& b = kid(1);
      check_axis(s, n.axis);
      if (b.size() != s.size()) ill("concat rank");
      s[size_t(n.axis)] = self->dim_id(dims_[s[size_t(n.axis)]] + dims_[b[size_t(n.axis)]]);
      return s;
    }
    case TOp::SplitPart: {
      Shape s = kid(0);
      check_axis(s, n.axis);
      s[size_t(n.axis)] = self->dim_id(dims_[s[size_t(n.axis)]] / Dim(int64_t(n.payload >> 16)));
      return s;
    }
    case TOp::Partition: {
      Shape s = kid(0);
      check_axis(s, n.axis);
      s[size_t(n.axis)] = self->dim_id(dims_[s[size_t(n.axis)]] / dims_[n.payload]);
      s.insert(s.begin(), DimId(n.payload));
      return s;
    }
    case TOp::Replicate: {
      Shape s = kid(0);
      s.insert(s.begin(), DimId(n.payload));
      return s;
    }
    case TOp::Combine: {
      Shape s = kid(0);
      if (s.size() < 2) ill("combine needs a grid axis and data");
      check_axis(s, n.axis + 1);
      DimId g = s[0];
      s.erase(s.begin());
      s[size_t(n.axis)] = self->dim_id(dims_[g] * dims_[s[size_t(n.axis)]]);
      return s;
    }
    case TOp::Reduce: {
      Shape s = kid(0);
      if (s.empty()) ill("reduce of a scalar");
      s.erase(s.begin());
      return s;
    }
    default:
      if (is_unary(o)) return kid(0);
      if (is_binary(o)) {
        size_t r = std::max(kid(0).size(), kid(1).size());
        Shape out(r);
        for (size_t i = 0; i < r; ++i) {
          DimId da = dim_at(n.child[0], int(i), r), db = dim_at(n.child[1], int(i), r);
          if (da == db || db == one()) out[i] = da;
          else if (da == one()) out[i] = db;
          else ill("cannot broadcast " + dims_[da].str() + " with " + dims_[db].str());
        }
        return out;
      }
      ill("unknown op");
  }
}

void TensorGraph::make(const EGraph&, Id cls, const ENode& node) {
  Shape s = infer(node);
  if (data_.size() <= cls) data_.resize(size_t(cls) + 1);
  data_[cls].shape = shape_id(s);
  data_[cls].constant = TOp(node.op) == TOp::Const ? int32_t(node.payload) : -1;
  if (TOp(node.op) == TOp::SplitAx) {
    std::pair<DimId, DimId> pair{shape_of(node.child[0])[size_t(node.axis)], DimId(node.payload)};
    if (std::find(split_pairs_.begin(), split_pairs_.end(), pair) == split_pairs_.end()) split_pairs_.push_back(pair);
  }
}

MergeResult TensorGraph::merge(Id into, Id from) {
  Data &a = data_[into], &b = data_[from];
  if (a.shape != b.shape)
    throw std::logic_error("refusing to merge e-classes of different shapes " + shape_text(a.shape) + " and " + shape_text(b.shape));
  MergeResult r;
  if (a.constant < 0 && b.constant >= 0) {
    a.constant = b.constant;
    r.into_changed = true;
  } else if (a.constant >= 0 && b.constant < 0) {
    r.from_changed = true;
  }
  return r;
}

bool TensorGraph::update(const EGraph&, Id cls, const ENode& node) {
  if (shape_id(infer(node)) != data_[cls].shape) throw std::logic_error("a node's shape changed under its class");
  if (TOp(node.op) == TOp::Const && data_[cls].constant < 0) {
    data_[cls].constant = int32_t(node.payload);
    return true;
  }
  return false;
}

std::string TensorGraph::print(Id root, const NodeAt& at, size_t max_len) const {
  std::string out;
  std::function<void(Id)> go = [&](Id id) {
    if (out.size() > max_len) return;
    const ENode& n = at(id);
    const TOp o = TOp(n.op);
    auto axis_size = [&](Id x, int axis) { return dims_[dim_at(x, axis)].str(); };
    auto call = [&](const std::string& name, const std::string& pre, const std::string& post) {
      out += name + "(" + pre;
      for (int i = 0; i < n.arity; ++i) {
        if (i) out += ", ";
        go(n.child[i]);
      }
      out += post + ")";
    };
    switch (o) {
      case TOp::Input: out += inputs_[n.payload].name; return;
      case TOp::Const: out += constant_str(consts_[n.payload]); return;
      case TOp::Add: case TOp::Sub: case TOp::Mul: case TOp::Div: {
        out += "(";
        go(n.child[0]);
        out += o == TOp::Add ? " + " : o == TOp::Sub ? " - " : o == TOp::Mul ? " * " : " / ";
        go(n.child[1]);
        out += ")";
        return;
      }
      case TOp::Sum: case TOp::Max: case TOp::Rms:
        return call(top_name(o), axis_size(n.child[0], n.axis) + "@" + std::to_string(n.axis) + ", ", "");
      case TOp::Unsqueeze: case TOp::Squeeze: case TOp::Combine:
        return call(top_name(o), "", ", " + std::to_string(n.axis));
      case TOp::SplitAx: case TOp::Partition:
        return call(top_name(o), "", ", " + std::to_string(n.axis) + ", " + dims_[n.payload].str());
      case TOp::Replicate: return call(top_name(o), "", ", " + dims_[n.payload].str());
      case TOp::Transpose: {
        std::string p;
        for (int v : perms_[n.payload]) p += (p.empty() ? "" : ", ") + std::to_string(v);
        return call("transpose", "", ", [" + p + "]");
      }
      case TOp::Reshape: return call("reshape", "", ", " + shape_text(n.payload));
      case TOp::Cast: return call(dtype_name(DType(n.payload)), "", "");
      case TOp::Concat: return call("concat", "", ", axis=" + std::to_string(n.axis));
      case TOp::SplitPart:
        return call("split", "", ", axis=" + std::to_string(n.axis) + ", parts=" + std::to_string(n.payload >> 16) + ", index=" + std::to_string(n.payload & 0xffff));
      default: return call(top_name(o), "", "");
    }
  };
  go(root);
  if (out.size() > max_len) out = out.substr(0, max_len) + "…";
  return out;
}

namespace {

// A Program written value by value, as to_program reads a term: every value f32 (a cast's rounds),
// named t<id>, inputs by name once each.
struct ProgramWriter {
  Program p;
  std::map<std::string, int> input_ids;

  int value(Op op, std::vector<int> operands, const std::vector<Dim>& shape, Attrs attrs = {}) {
    Value v;
    v.id = int(p.values.size());
    v.name = "t" + std::to_string(v.id);
    v.op = op;
    v.operands = std::move(operands);
    v.attrs = std::move(attrs);
    v.type = Type{DType::F32, shape, false};
    p.values.push_back(v);
    return v.id;
  }
  int input(const std::string& name, const std::vector<Dim>& shape) {
    if (auto it = input_ids.find(name); it != input_ids.end()) return it->second;
    int id = value(Op::Input, {}, shape);
    p.values[size_t(id)].name = name;
    p.values[size_t(id)].named = true;
    p.inputs.push_back(id);
    input_ids[name] = id;
    return id;
  }
  int reshape(int x, const std::vector<Dim>& shape) {
    Attrs a;
    a.shape = shape;
    return value(Op::Reshape, {x}, shape, a);
  }
  // partition@axis$g of x (dims `split` before the cut): [.., d, ..] -> [.., g, d/g, ..] -> the g
  // axis moved to the front.
  int partition(int x, std::vector<Dim> split, const Dim& g, int axis, const std::vector<Dim>& shape) {
    split[size_t(axis)] = split[size_t(axis)] / g;
    split.insert(split.begin() + axis, g);
    int s = reshape(x, split);
    Attrs attrs;
    attrs.perm.push_back(axis);
    for (int i = 0; i < int(split.size()); ++i)
      if (i != axis) attrs.perm.push_back(i);
    return value(Op::Transpose, {s}, shape, attrs);
  }
  // combine@axis of y (dims `y`): [g, .., t, ..] -> g moved next to t -> merged into g*t.
  int combine(int x, const std::vector<Dim>& y, int axis, const std::vector<Dim>& shape) {
    Attrs attrs;
    std::vector<Dim> moved;
    for (int i = 1; i <= axis; ++i) {
      attrs.perm.push_back(i);
      moved.push_back(y[size_t(i)]);
    }
    attrs.perm.push_back(0);
    moved.push_back(y[0]);
    for (int i = axis + 1; i < int(y.size()); ++i) {
      attrs.perm.push_back(i);
      moved.push_back(y[size_t(i)]);
    }
    return reshape(value(Op::Transpose, {x}, moved, attrs), shape);
  }
  // replicate$g of x (dims `lifted` before the grid axis): x times a [g, 1, ..] input of ones.
  int replicate(int x, std::vector<Dim> lifted, const Dim& g, const std::vector<Dim>& shape) {
    lifted.insert(lifted.begin(), Dim(1));
    int r = reshape(x, lifted);
    std::vector<Dim> ones_shape(lifted.size(), Dim(1));
    ones_shape[0] = g;
    int ones = input("__ones_" + g.canonical() + "_" + std::to_string(lifted.size()), ones_shape);
    return value(Op::Mul, {ones, r}, shape);
  }
  // reduce of x (dims `kept`): the sum over the grid axis, kept, then dropped.
  int reduce(int x, std::vector<Dim> kept, const std::vector<Dim>& shape) {
    kept[0] = Dim(1);
    Attrs attrs;
    attrs.axis = 0;
    attrs.keepdims = true;
    return reshape(value(Op::Sum, {x}, kept, attrs), shape);
  }
  // The program's dims: every symbol of a value's shape, in order of appearance.
  void collect_dims() {
    for (const Value& v : p.values)
      for (const Dim& d : v.type.shape)
        for (const auto& s : d.symbols())
          if (std::find(p.dims.begin(), p.dims.end(), s) == p.dims.end()) p.dims.push_back(s);
  }
};

}  // namespace

Program TensorGraph::to_program(const std::vector<Id>& outputs, const NodeAt& at) const {
  ProgramWriter w;
  w.p.name = "term";
  std::unordered_map<Id, int> done;
  auto dims = [&](const Shape& s) {
    std::vector<Dim> out;
    for (DimId d : s) out.push_back(dims_[d]);
    return out;
  };
  std::function<int(Id)> go = [&](Id id) -> int {
    if (auto it = done.find(id); it != done.end()) return it->second;
    const ENode& n = at(id);
    const TOp o = TOp(n.op);
    std::vector<int> kids;
    for (int i = 0; i < n.arity; ++i) kids.push_back(go(n.child[i]));
    std::vector<Dim> shape = dims(infer(n));
    Attrs attrs;
    int v = -1;
    switch (o) {
      case TOp::Input: v = w.input(inputs_[n.payload].name, shape); break;
      case TOp::Const: {
        attrs.constant = consts_[n.payload];
        v = w.value(Op::Const, {}, {}, attrs);
        w.p.values[size_t(v)].type.weak = true;
        w.p.values[size_t(v)].name.clear();
        break;
      }
      case TOp::Matmul: v = w.value(Op::Matmul, kids, shape); break;
      case TOp::Sum: case TOp::Max: case TOp::Rms:
        attrs.axis = n.axis;
        attrs.keepdims = true;
        v = w.value(o == TOp::Sum ? Op::Sum : o == TOp::Max ? Op::Max : Op::Rms, kids, shape, attrs);
        break;
      case TOp::Unsqueeze: case TOp::Squeeze: case TOp::SplitAx: case TOp::Reshape: v = w.reshape(kids[0], shape); break;
      case TOp::Transpose:
        attrs.perm = perms_[n.payload];
        v = w.value(Op::Transpose, kids, shape, attrs);
        break;
      case TOp::Cast:
        attrs.dtype = DType(n.payload);
        v = w.value(Op::Cast, kids, shape, attrs);
        w.p.values[size_t(v)].type.dtype = DType(n.payload);  // rounded there; its readers compute in f32
        break;
      case TOp::Concat:
        attrs.axis = n.axis;
        v = w.value(Op::Concat, kids, shape, attrs);
        break;
      case TOp::SplitPart:
        attrs.axis = n.axis;
        attrs.parts = int(n.payload >> 16);
        attrs.index = int(n.payload & 0xffff);
        v = w.value(Op::Split, kids, shape, attrs);
        break;
      case TOp::Partition: v = w.partition(kids[0], dims(shape_of(n.child[0])), dims_[n.payload], n.axis, shape); break;
      case TOp::Combine: v = w.combine(kids[0], dims(shape_of(n.child[0])), n.axis, shape); break;
      case TOp::Replicate: v = w.replicate(kids[0], dims(shape_of(n.child[0])), dims_[n.payload], shape); break;
      case TOp::Reduce: v = w.reduce(kids[0], dims(shape_of(n.child[0])), shape); break;
      default: {
        if (is_unary(o) || is_binary(o)) v = w.value(*ir_op(o), kids, shape);
        else ill("to_program: unknown op");
      }
    }
    done[id] = v;
    return v;
  };
  for (Id o : outputs) w.p.outputs.push_back(go(o));
  w.collect_dims();
  return std::move(w.p);
}

}  // namespace prism::eg
