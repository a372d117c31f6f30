#include "engine/backend/eager_plan.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "engine/error.h"
#include "engine/ir/shape.h"

namespace prism::backend::eager {

namespace {

using Shape = std::vector<int64_t>;

class Planner {
 public:
  Planner(const Program& p, const DimBindings& b) : p_(p), b_(b), shapes_(p.values.size()) {
    for (const Value& v : p.values) shapes_[size_t(v.id)] = concrete_shape(v.type.shape, b);
  }

  Plan run() {
    find_gemm_transposes();
    for (size_t i = 0; i < p_.inputs.size(); ++i)
      where_[p_.inputs[i]] = Access{buffer(Buffer::Role::Input, i, p_.value(p_.inputs[i])), 0, 0, {}};
    for (size_t j = 0; j < p_.outputs.size(); ++j) buffer(Buffer::Role::Output, j, p_.value(p_.outputs[j]));
    out_.inputs = p_.inputs.size();
    out_.outputs = p_.outputs.size();
    for (const Value& v : p_.values) value(v);
    // An output not computed in its slot (an input, a view, a value returned twice) is copied there.
    for (size_t j = 0; j < p_.outputs.size(); ++j) {
      const int id = p_.outputs[j];
      const Access& from = where_.at(id);
      const int slot = int(out_.inputs + j);
      if (from.buffer == slot) continue;
      Step s = gather("copy", p_.value(id), {element_count(shape(id))}, slot);
      s.in.push_back(from);
      s.in.back().strides = {from.buffer < 0 ? 0 : 1};
      out_.steps.push_back(std::move(s));
    }
    return std::move(out_);
  }

 private:
  const Shape& shape(int id) const { return shapes_[size_t(id)]; }

  // Transposes of the last two dims that only matmuls read (and no output is): the GEMM reads
  // their operand transposed instead.
  void find_gemm_transposes() {
    std::map<int, bool> only_matmuls;
    for (const Value& v : p_.values)
      for (int o : v.operands) {
        auto [it, fresh] = only_matmuls.emplace(o, true);
        it->second = it->second && v.op == Op::Matmul;
      }
    for (int o : p_.outputs) only_matmuls[o] = false;
    for (const Value& v : p_.values) {
      if (v.op != Op::Transpose || p_.value(v.operands[0]).op == Op::Const || !only_matmuls[v.id]) continue;
      const size_t r = v.attrs.perm.size();
      bool last_two = r >= 2 && v.attrs.perm[r - 1] == int(r - 2) && v.attrs.perm[r - 2] == int(r - 1);
      for (size_t i = 0; i + 2 < r; ++i) last_two = last_two && v.attrs.perm[i] == int(i);
      if (last_two) gemm_transposed_[v.id] = v.operands[0];
    }
  }

  int buffer(Buffer::Role role, size_t slot, const Value& v) {
    out_.buffers.push_back({role, slot, v.id, v.name, element_count(shape(v.id)), v.type.dtype});
    return int(out_.buffers.size()) - 1;
  }

  // Where a computed value goes: its first return slot when it is returned, else a new scratch buffer.
  int destination(const Value& v) {
    for (size_t j = 0; j < p_.outputs.size(); ++j)
      if (p_.outputs[j] == v.id) return (where_[v.id] = Access{int(out_.inputs + j), 0, 0, {}}).buffer;
    size_t scratch = 0;
    for (const Buffer& b : out_.buffers) scratch += b.role == Buffer::Role::Scratch;
    return (where_[v.id] = Access{buffer(Buffer::Role::Scratch, scratch, v), 0, 0, {}}).buffer;
  }

  // Operand `id` read with `strides` (a constant ignores them).
  Access operand(int id, Shape strides, int64_t offset = 0) const {
    Access a = where_.at(id);
    a.strides = a.buffer < 0 ? Shape(strides.size(), 0) : std::move(strides);
    a.offset = a.buffer < 0 ? 0 : offset;
    return a;
  }

  Step gather(const std::string& what, const Value& v, Shape shape, int out, Shape out_strides = {}, int64_t out_offset = 0) const {
    Step s;
    s.kind = Step::Kind::Gather;
    s.what = what;
    s.value = v.name;
    if (out_strides.empty()) out_strides = dense_strides(shape);
    s.out = Access{out, 0, out_offset, std::move(out_strides)};
    s.shape = std::move(shape);
    return s;
  }

  void value(const Value& v) {
    switch (op_class(v.op)) {
      case OpClass::Input: return;
      case OpClass::Const: return constant(v);
      case OpClass::Reshape: where_[v.id] = where_.at(v.operands[0]); return;
      case OpClass::Unary:
      case OpClass::Binary: return elementwise(v);
      case OpClass::Matmul: return matmul(v);
      case OpClass::Reduce: return reduce(v);
      case OpClass::Transpose: return transpose(v);
      case OpClass::Concat: return concat(v);
      case OpClass::Split: return split(v);
      case OpClass::Composite: break;
    }
    throw Error(Error::Kind::Failed, std::string("eager: '") + op_name(v.op) + "' must be lowered first (lower_composites)");
  }

  void constant(const Value& v) { where_[v.id] = Access{-1, float(v.attrs.constant.value(b_)), 0, {}}; }


  // Operands of the result's shape are read flat; others broadcast along the result's dims.
  void elementwise(const Value& v) {
    const Shape& out = shape(v.id);
    bool flat = true;
    for (int o : v.operands) flat = flat && shape(o) == out;
    Step s = flat ? gather(op_name(v.op), v, {element_count(out)}, destination(v)) : gather(op_name(v.op), v, out, destination(v));
    s.elementwise = true;
    s.op = v.op;
    for (int o : v.operands) s.in.push_back(operand(o, flat ? Shape{1} : broadcast_strides(shape(o), out)));
    out_.steps.push_back(std::move(s));
  }

  void matmul(const Value& v) {
    const Shape &sa = shape(v.operands[0]), &sb = shape(v.operands[1]), &out = shape(v.id);
    Step s;
    s.kind = Step::Kind::Matmul;
    s.what = op_name(v.op);
    s.value = v.name;
    s.op = v.op;
    s.m = sa[sa.size() - 2], s.k = sa.back(), s.n = sb.back();
    s.shape.assign(out.begin(), out.end() - 2);
    auto scaled = [](Shape strides, int64_t matrix) {
      for (int64_t& x : strides) x *= matrix;
      return strides;
    };
    // A transpose only GEMMs read is its operand, read transposed (the batch dims are the same).
    auto source = [&](int o, bool& trans) {
      auto it = gemm_transposed_.find(o);
      trans = it != gemm_transposed_.end();
      return trans ? it->second : o;
    };
    const int a = source(v.operands[0], s.trans_a), b = source(v.operands[1], s.trans_b);
    s.in.push_back(operand(a, scaled(broadcast_strides(Shape(sa.begin(), sa.end() - 2), s.shape), s.m * s.k)));
    s.in.push_back(operand(b, scaled(broadcast_strides(Shape(sb.begin(), sb.end() - 2), s.shape), s.k * s.n)));
    s.out = Access{destination(v), 0, 0, scaled(dense_strides(s.shape), s.m * s.n)};
    out_.steps.push_back(std::move(s));
  }

  void reduce(const Value& v) {
    const Shape& x = shape(v.operands[0]);
    const size_t axis = size_t(v.attrs.axis);
    Step s;
    s.kind = Step::Kind::Reduce;
    s.what = op_name(v.op);
    s.value = v.name;
    s.op = v.op;
    s.outer = 1, s.inner = 1, s.k = x[axis];
    for (size_t i = 0; i < axis; ++i) s.outer *= x[i];
    for (size_t i = axis + 1; i < x.size(); ++i) s.inner *= x[i];
    s.in.push_back(operand(v.operands[0], {}));
    s.out = Access{destination(v), 0, 0, {}};
    out_.steps.push_back(std::move(s));
  }

  void transpose(const Value& v) {
    if (gemm_transposed_.count(v.id)) return;  // read by its GEMMs in place
    const Shape& x = shape(v.operands[0]);
    Shape in_strides = dense_strides(x), strides(x.size());
    for (size_t i = 0; i < x.size(); ++i) strides[i] = in_strides[size_t(v.attrs.perm[i])];
    Step s = gather("transpose", v, shape(v.id), destination(v));
    s.in.push_back(operand(v.operands[0], strides));
    out_.steps.push_back(std::move(s));
  }

  // Each operand's rows of `chunk` elements copied into place.
  void concat(const Value& v) {
    const Shape& out = shape(v.id);
    const size_t axis = size_t(v.attrs.axis);
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= out[i];
    for (size_t i = axis + 1; i < out.size(); ++i) inner *= out[i];
    const int dst = destination(v);
    int64_t at = 0;
    const int64_t row = out[axis] * inner;
    for (int o : v.operands) {
      const int64_t chunk = shape(o)[axis] * inner;
      Step s = gather("concat", v, {outer, chunk}, dst, {row, 1}, at);
      s.in.push_back(operand(o, {chunk, 1}));
      out_.steps.push_back(std::move(s));
      at += chunk;
    }
  }

  void split(const Value& v) {
    const Shape &out = shape(v.id), &x = shape(v.operands[0]);
    const size_t axis = size_t(v.attrs.axis);
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= out[i];
    for (size_t i = axis + 1; i < out.size(); ++i) inner *= out[i];
    const int64_t part = out[axis] * inner, whole = x[axis] * inner;
    Step s = gather("split", v, {outer, part}, destination(v));
    s.in.push_back(operand(v.operands[0], {whole, 1}, v.attrs.index * part));
    out_.steps.push_back(std::move(s));
  }

  const Program& p_;
  const DimBindings& b_;
  std::vector<Shape> shapes_;
  std::map<int, Access> where_;  // value id -> its buffer (offset 0, no strides) or its constant
  std::map<int, int> gemm_transposed_;  // a transpose only matmuls read -> its operand
  Plan out_;
};

}  // namespace

Plan plan(const Program& lowered, const DimBindings& bindings) { return Planner(lowered, bindings).run(); }

FoldText fold_text(Op op, int64_t k, const FoldDialect& d) {
  const std::string isnan = d.isnan;
  FoldText t;
  t.init = op == Op::Max ? d.minus_infinity : "0.0f";
  t.update = op == Op::Max   ? "if (x > acc || " + isnan + "(x)) acc = " + isnan + "(acc) ? acc : x;"
             : op == Op::Rms ? "acc += x * x;"
                             : "acc += x;";
  t.result = op == Op::Rms ? std::string(d.sqrt) + "(acc / " + float_literal(float(k), "", "") + ")" : "acc";
  return t;
}

std::string float_literal(float x, const char* nan, const char* infinity) {
  if (std::isnan(x)) return nan;
  if (std::isinf(x)) return x > 0 ? infinity : std::string("-") + infinity;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%af", double(x));
  return buf;
}

}  // namespace prism::backend::eager
