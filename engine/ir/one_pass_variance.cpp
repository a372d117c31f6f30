#include "engine/ir/one_pass_variance.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/edit_program.h"

namespace prism {

namespace {

struct Centred {
  int x = -1;     // the summed values' source
  int mean = -1;  // m = sum(x, axis) / k
  int k = -1;     // the constant k
};

// x - m where m is x's mean over `axis` (kept as a size-1 axis), or none.
std::optional<Centred> centred(const Program& p, int id, int axis) {
  const Value& c = p.value(id);
  if (c.op != Op::Sub) return std::nullopt;
  const Value& x = p.value(c.operands[0]);
  const Value& m = p.value(c.operands[1]);
  if (x.type.shape != c.type.shape || size_t(axis) >= x.type.shape.size()) return std::nullopt;
  if (m.op != Op::Div || m.type.shape.size() != x.type.shape.size()) return std::nullopt;
  const Value& sum = p.value(m.operands[0]);
  const Value& k = p.value(m.operands[1]);
  if (sum.op != Op::Sum || sum.operands[0] != x.id || sum.attrs.axis != axis || !sum.attrs.keepdims) return std::nullopt;
  if (k.op != Op::Const || !k.attrs.constant.exact || !(*k.attrs.constant.exact == x.type.shape[size_t(axis)])) return std::nullopt;
  return Centred{x.id, m.id, k.id};
}

// The deviations a sum squares: (x - m) * (x - m), also as two equal subtractions, or square(x - m).
std::optional<Centred> squared_deviations(const Program& p, const Value& sum) {
  const Value& sq = p.value(sum.operands[0]);
  const int axis = sum.attrs.axis;
  if (sq.op == Op::Square) return centred(p, sq.operands[0], axis);
  if (sq.op != Op::Mul) return std::nullopt;
  const std::optional<Centred> a = centred(p, sq.operands[0], axis);
  const std::optional<Centred> b = centred(p, sq.operands[1], axis);
  // Both are x minus x's mean over the axis (computed once or twice): the same deviations.
  if (!a || !b || a->x != b->x) return std::nullopt;
  return a;
}

// One rewrite of the first sum of squared deviations; false when there is none.
bool rewrite_one(Program& p) {
  for (const Value& s : p.values) {
    if (s.op != Op::Sum) continue;
    const std::optional<Centred> c = squared_deviations(p, s);
    if (!c) continue;
    const Value sum = s;  // appending below may move p.values
    Program q = p;
    Attrs reduce;
    reduce.axis = sum.attrs.axis;
    reduce.keepdims = sum.attrs.keepdims;
    auto append = [&](Op op, std::vector<int> operands, Attrs attrs, const std::string& name) {
      const int id = append_value(q, op, std::move(operands), std::move(attrs), sum.pos);
      if (id >= 0) q.values[size_t(id)].name = fresh_name(q, name);
      return id;
    };
    const int squares = append(Op::Mul, {c->x, c->x}, {}, sum.name + "_squares");
    const int total = append(Op::Sum, {squares}, reduce, sum.name + "_sum_squares");
    const int mm = append(Op::Mul, {c->mean, c->mean}, {}, sum.name + "_mean_squared");
    const int kmm = mm < 0 ? -1 : append(Op::Mul, {c->k, mm}, {}, sum.name + "_k_mean_squared");
    if (total < 0 || kmm < 0) continue;
    const int result = append_value(q, Op::Sub, {total, kmm}, {}, sum.pos);
    // A sum without its axis would broadcast [n] against [n, 1]: such a sum stays as it is.
    if (result < 0 || q.value(result).type.shape != sum.type.shape) continue;
    q.values[size_t(result)].type.dtype = sum.type.dtype;  // a statistic kept in f32 stays f32 (drop_casts.h)
    q.values[size_t(sum.id)].name = fresh_name(q, sum.name + "_two_pass");
    q.values[size_t(sum.id)].named = false;
    q.values[size_t(result)].name = sum.name;
    q.values[size_t(result)].named = sum.named;
    replace_uses(q, sum.id, result);
    p = std::move(q);
    return true;
  }
  return false;
}

}  // namespace

std::optional<Program> one_pass_variance(const Program& lowered) { return rewrite_until_done(lowered, rewrite_one); }

}  // namespace prism
