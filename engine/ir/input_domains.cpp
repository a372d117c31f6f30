#include "engine/ir/input_domains.h"

#include <algorithm>

namespace prism {

namespace {

bool at_least(Domain have, Domain need) { return int(have) >= int(need); }

// The sign of a constant: a dim expression without a minus is a size, hence positive.
Domain constant_sign(const Constant& c) {
  double value = c.number;
  if (c.exact) {
    std::optional<Rational> exact = c.exact->constant_value();
    if (!exact) return c.exact->str().find('-') == std::string::npos ? Domain::Positive : Domain::Any;
    value = exact->to_double();
  }
  return value > 0 ? Domain::Positive : value == 0 ? Domain::NonNegative : Domain::Any;
}

// The weaker of two signs.
Domain weaker(Domain a, Domain b) { return at_least(a, b) ? b : a; }

class Inference {
 public:
  explicit Inference(const Program& p) : p_(p), domain_(p.values.size(), Domain::Any), sign_(p.values.size(), Domain::Any) {
    for (int id : p.inputs) domain_[size_t(id)] = p.value(id).domain;
  }

  std::vector<Domain> run() {
    // Each met need may raise an input, which may meet another: repeat until nothing changes
    // (domains only rise, so this ends).
    for (bool changed = true; changed;) {
      changed = false;
      for (const Value& v : p_.values)
        for (const auto& [operand, need] : needs(v)) changed = meet(operand, need) || changed;
    }
    std::vector<Domain> out;
    for (int id : p_.inputs) out.push_back(domain_[size_t(id)]);
    return out;
  }

 private:
  // What an op needs of its operands: sqrt a non-negative one, rsqrt and log a positive one, a
  // division a positive divisor.
  static std::vector<std::pair<int, Domain>> needs(const Value& v) {
    switch (v.op) {
      case Op::Sqrt: return {{v.operands[0], Domain::NonNegative}};
      case Op::Rsqrt:
      case Op::Log: return {{v.operands[0], Domain::Positive}};
      case Op::Div: return {{v.operands[1], Domain::Positive}};
      default: return {};
    }
  }

  // Meets `need` on value id by raising inputs, all or nothing; true when it raised one.
  bool meet(int id, Domain need) {
    signs();
    const std::vector<Domain> before = domain_;
    if (require(id, need)) return domain_ != before;
    domain_ = before;
    return false;
  }

  // The signs of every value, forward from the inputs' domains.
  void signs() {
    for (const Value& v : p_.values) sign_[size_t(v.id)] = sign_of(v);
  }

  Domain sign_of(const Value& v) const {
    auto s = [&](size_t i) { return sign_[size_t(v.operands[i])]; };
    switch (v.op) {
      case Op::Input: return domain_[size_t(v.id)];
      case Op::Const: return constant_sign(v.attrs.constant);
      case Op::Exp:
      case Op::Sigmoid:
      case Op::Rsqrt:
      case Op::Rms:
      case Op::Softmax: return Domain::Positive;
      case Op::Abs:
      case Op::Relu:
      case Op::Gt:
      case Op::Ge:
      case Op::Eq:
      case Op::Ne: return Domain::NonNegative;
      case Op::Square: return s(0) == Domain::Positive ? Domain::Positive : Domain::NonNegative;
      case Op::Sqrt: return s(0) == Domain::Positive ? Domain::Positive : Domain::NonNegative;
      case Op::Add:
        if (!at_least(s(0), Domain::NonNegative) || !at_least(s(1), Domain::NonNegative)) return Domain::Any;
        return s(0) == Domain::Positive || s(1) == Domain::Positive ? Domain::Positive : Domain::NonNegative;
      case Op::Mul:
        if (v.operands[0] == v.operands[1]) return s(0) == Domain::Positive ? Domain::Positive : Domain::NonNegative;
        return weaker(s(0), s(1));
      case Op::Div: return s(1) == Domain::Positive ? s(0) : Domain::Any;
      case Op::Matmul: return weaker(s(0), s(1));
      case Op::Sum:
      case Op::Max:
      case Op::Mean:
      case Op::Transpose:
      case Op::Reshape:
      case Op::Split: return s(0);
      case Op::Concat: {
        Domain d = Domain::Positive;
        for (size_t i = 0; i < v.operands.size(); ++i) d = weaker(d, s(i));
        return d;
      }
      default: return Domain::Any;
    }
  }

  // Raises inputs so that value id is at least `need`, through sign-keeping ops only; false
  // where it meets another op (the caller undoes what this raised).
  bool require(int id, Domain need) {
    if (at_least(sign_[size_t(id)], need)) return true;
    const Value& v = p_.value(id);
    const std::vector<int>& x = v.operands;
    switch (v.op) {
      case Op::Input:
        domain_[size_t(id)] = need;
        signs();
        return true;
      case Op::Add:
        if (need == Domain::NonNegative) return require(x[0], need) && require(x[1], need);
        if (sign_[size_t(x[1])] == Domain::Positive) return require(x[0], Domain::NonNegative);
        if (sign_[size_t(x[0])] == Domain::Positive) return require(x[1], Domain::NonNegative);
        return require(x[0], Domain::Positive) && require(x[1], Domain::NonNegative);
      case Op::Mul:
      case Op::Matmul: return require(x[0], need) && require(x[1], need);
      case Op::Div: return require(x[0], need) && require(x[1], Domain::Positive);
      case Op::Square: return require(x[0], Domain::Positive);
      case Op::Sqrt:
      case Op::Sum:
      case Op::Max:
      case Op::Mean:
      case Op::Transpose:
      case Op::Reshape:
      case Op::Split: return require(x[0], need);
      case Op::Concat:
        return std::all_of(x.begin(), x.end(), [&](int o) { return require(o, need); });
      default: return false;
    }
  }

  const Program& p_;
  std::vector<Domain> domain_;  // inputs' domains (other values: unused)
  std::vector<Domain> sign_;    // every value's sign under domain_
};

}  // namespace

std::vector<Domain> input_domains(const Program& program) { return Inference(program).run(); }

}  // namespace prism
