#include "engine/egraph/from_program.h"

#include <algorithm>

#include "engine/error.h"
#include "engine/ir/rounding_casts.h"

namespace prism::eg {

namespace {

class Builder {
 public:
  Builder(TensorGraph& tg, AddedTerms& stats) : tg_(tg), stats_(stats) {}

  // Every node goes through here, so added/shared count each term node once.
  Id node(TOp op, std::vector<Id> kids, int axis = 0, uint32_t payload = 0) {
    size_t before = tg_.graph().num_nodes();
    Id id = tg_.op(op, kids, axis, payload);
    count(before);
    return id;
  }
  void count(size_t before) { (tg_.graph().num_nodes() > before ? stats_.added : stats_.shared)++; }
  Id pad(Id x, size_t rank) {
    while (tg_.rank(x) > 0 && tg_.rank(x) < rank) x = node(TOp::Unsqueeze, {x}, 0);
    return x;
  }
  Id reshape(Id x, const std::vector<Dim>& to);

  TensorGraph& tg_;
  AddedTerms& stats_;
};

// Squeezes (highest axis first), then splits of one axis into two, then unsqueezes (lowest
// first), when the reshape is exactly that; else an opaque reshape node.
Id Builder::reshape(Id x, const std::vector<Dim>& to) {
  std::vector<Dim> from = tg_.dims_of(x);
  const Dim one(1);
  std::vector<Dim> src, dst;
  for (const Dim& d : from)
    if (d != one) src.push_back(d);
  for (const Dim& d : to)
    if (d != one) dst.push_back(d);
  std::vector<std::pair<size_t, Dim>> splits;  // (axis in the squeezed shape, factor)
  size_t j = 0, axis = 0;
  bool ok = true;
  for (size_t i = 0; i < src.size() && ok; ++i) {
    if (j < dst.size() && src[i] == dst[j]) {
      ++j;
      ++axis;
    } else if (j + 1 < dst.size() && src[i] == dst[j] * dst[j + 1]) {
      splits.push_back({axis, dst[j]});
      j += 2;
      axis += 2;
    } else {
      ok = false;
    }
  }
  if (!ok || j != dst.size()) {
    size_t before = tg_.graph().num_nodes();
    Id id = tg_.reshape(to, x);
    count(before);
    return id;
  }
  for (size_t i = from.size(); i-- > 0;)
    if (from[i] == one) x = node(TOp::Squeeze, {x}, int(i));
  for (const auto& [a, f] : splits) {
    size_t before = tg_.graph().num_nodes();
    x = tg_.splitax(int(a), f, x);
    count(before);
  }
  for (size_t i = 0; i < to.size(); ++i)
    if (to[i] == one) x = node(TOp::Unsqueeze, {x}, int(i));
  return x;
}

}  // namespace

Id add_reshape(TensorGraph& tg, Id x, const std::vector<Dim>& to) {
  AddedTerms stats;
  return Builder(tg, stats).reshape(x, to);
}

AddedTerms add_program(TensorGraph& tg, const Program& p) {
  AddedTerms stats;
  Builder b(tg, stats);
  std::vector<Id> ids(p.values.size(), kNoId);
  const std::vector<bool> rounds = rounding_casts(p);
  for (const Value& v : p.values) {
    auto in = [&](size_t i) { return ids[size_t(v.operands[i])]; };
    Id out = kNoId;
    switch (v.op) {
      case Op::Input: {
        size_t before = tg.graph().num_nodes();
        out = tg.input(v.name, v.type.shape);
        b.count(before);
        break;
      }
      case Op::Const: {
        size_t before = tg.graph().num_nodes();
        out = tg.constant(v.attrs.constant);
        b.count(before);
        break;
      }
      case Op::Cast:
        out = rounds[size_t(v.id)] ? b.node(TOp::Cast, {in(0)}, 0, uint32_t(v.type.dtype)) : in(0);
        break;
      case Op::Matmul: {
        if (tg.rank(in(0)) < 2 || tg.rank(in(1)) < 2)
          throw Error(Error::Kind::InvalidArgument, "the e-graph does not model matmul of a 1-D operand ('" + v.name + "')");
        size_t r = std::max(tg.rank(in(0)), tg.rank(in(1)));
        out = b.node(TOp::Matmul, {b.pad(in(0), r), b.pad(in(1), r)});
        break;
      }
      case Op::Sum: case Op::Max: case Op::Rms: {
        TOp op = v.op == Op::Sum ? TOp::Sum : v.op == Op::Max ? TOp::Max : TOp::Rms;
        out = b.node(op, {in(0)}, v.attrs.axis);
        if (!v.attrs.keepdims) out = b.node(TOp::Squeeze, {out}, v.attrs.axis);
        break;
      }
      case Op::Transpose: {
        size_t before = tg.graph().num_nodes();
        out = tg.transpose(v.attrs.perm, in(0));
        b.count(before);
        break;
      }
      case Op::Reshape: out = b.reshape(in(0), v.attrs.shape); break;
      case Op::Concat: {
        out = in(0);
        for (size_t i = 1; i < v.operands.size(); ++i) out = b.node(TOp::Concat, {out, in(i)}, v.attrs.axis);
        break;
      }
      case Op::Split: {
        size_t before = tg.graph().num_nodes();
        out = tg.split_part(v.attrs.axis, v.attrs.parts, v.attrs.index, in(0));
        b.count(before);
        break;
      }
      default:
        if (op_class(v.op) == OpClass::Unary) {
          out = b.node(term_op(v.op), {in(0)});
        } else if (op_class(v.op) == OpClass::Binary) {
          size_t r = std::max(tg.rank(in(0)), tg.rank(in(1)));
          out = b.node(term_op(v.op), {b.pad(in(0), r), b.pad(in(1), r)});
        } else {
          throw Error(Error::Kind::Failed, "add_program needs a lowered program (found " + std::string(op_name(v.op)) + ")");
        }
    }
    ids[size_t(v.id)] = out;
  }
  for (int o : p.outputs) stats.outputs.push_back(ids[size_t(o)]);
  return stats;
}

}  // namespace prism::eg
