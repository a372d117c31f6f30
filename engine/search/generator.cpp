#include "engine/search/generator.h"

#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <tuple>

#include "engine/egraph/axioms.h"

namespace prism::search {

namespace {

const std::vector<Op> kReduce = ops_of_class(OpClass::Reduce);

// The elementwise ops of class `cls` a DAG equal to `program` can have: the program's, and those
// an axiom can bring in (eg::ops_axioms_introduce). Any other op is an uninterpreted function the
// program's term never reaches, so a DAG with it can never be proved equal; leaving it out loses
// no family (docs/search.md, "The enumeration's ops"). Casts are never tried: the search sees
// programs without casts (drop_casts.h).
std::vector<Op> tried_ops(const Program& program, OpClass cls) {
  std::set<Op> reachable(eg::ops_axioms_introduce().begin(), eg::ops_axioms_introduce().end());
  for (const Value& v : program.values) reachable.insert(v.op);
  std::vector<Op> ops;
  for (Op op : ops_of_class(cls))
    if (op != Op::Cast && reachable.count(op)) ops.push_back(op);
  return ops;
}

using Key = std::tuple<int, int, int, int, int>;  // last operand, op, axis, operand 0, operand 1

Key key_of(const DagValue& v) {
  int a = v.operands.at(0), b = v.operands.size() > 1 ? v.operands[1] : -1;
  return {std::max(a, b), int(v.op), v.axis, a, b};
}

bool commutative(Op op) { return op == Op::Add || op == Op::Mul; }

// The result shape, or none when the operand dims do not provably agree.
std::optional<std::vector<Dim>> shape_of(const DagValue& v, const std::vector<DagValue>& values) {
  const Dim one(1);
  const auto& a = values[size_t(v.operands[0])].type.shape;
  if (v.operands.size() == 1) {
    if (is_reduction(v.op)) {
      if (v.axis >= int(a.size()) || a[size_t(v.axis)] == one) return std::nullopt;
      std::vector<Dim> s = a;
      s[size_t(v.axis)] = one;
      return s;
    }
    // An elementwise op of a scalar is a constant the kernel would compute (square(d)): the
    // program's constants are leaves as they are, and the kernel needs no other.
    if (a.empty()) return std::nullopt;
    return a;
  }
  const auto& b = values[size_t(v.operands[1])].type.shape;
  // A scalar (a constant) broadcasts against anything but another scalar; a matmul needs tensors.
  if (v.op != Op::Matmul && a.empty() != b.empty()) return a.empty() ? b : a;
  if (a.size() != b.size() || a.empty()) return std::nullopt;
  const size_t r = a.size();
  std::vector<Dim> s(r);
  if (v.op == Op::Matmul && r < 2) return std::nullopt;
  size_t batch = v.op == Op::Matmul ? r - 2 : r;
  if (v.op == Op::Matmul) {
    if (a[r - 1] != b[r - 2] || a[r - 1] == one) return std::nullopt;
    s[r - 2] = a[r - 2];
    s[r - 1] = b[r - 1];
  }
  for (size_t i = 0; i < batch; ++i) {
    if (a[i] == b[i] || b[i] == one) s[i] = a[i];
    else if (a[i] == one) s[i] = b[i];
    else return std::nullopt;
  }
  return s;
}

}  // namespace

struct Generator::State {
  Dag dag;
  std::vector<int> users;  // per value
  int dead = 0;            // ops nobody reads
};

Generator::Generator(const Program& program, const std::vector<DagValue>& leaves, const ProgramExpressions* expressions, int max_ops,
                     GenCounters& counters)
    : unary_(tried_ops(program, OpClass::Unary)), binary_(tried_ops(program, OpClass::Binary)), expr_(expressions), max_ops_(max_ops),
      counters_(counters) {
  for (size_t i = 0; i < leaves.size(); ++i) {
    DagValue v = leaves[i];
    if (expressions) v.cls = expressions->leaf(int(i));
    base_.values.push_back(std::move(v));
  }
  base_.num_inputs = int(base_.values.size());
  out_shape_ = program.value(program.outputs.at(0)).type.shape;
}

bool Generator::finished(const State& s) const {
  if (s.dag.num_ops() == 0 || s.dead != 1) return false;
  const DagValue& sink = s.dag.values.back();
  if (expr_) return sink.cls != eg::kNoId && sink.cls == expr_->root();
  return sink.type.shape == out_shape_;
}

void Generator::run(const std::function<void(const Dag&)>& emit, const std::function<bool()>& stop,
                    const std::function<void(std::function<void()>)>& spawn, int spawn_depth) const {
  State s;
  s.dag = base_;
  s.users.assign(base_.values.size(), 0);
  expand(s, emit, stop, spawn, spawn_depth);
}

void Generator::expand(State& s, const std::function<void(const Dag&)>& emit, const std::function<bool()>& stop,
                       const std::function<void(std::function<void()>)>& spawn, int spawn_depth) const {
  if (stop()) return;
  if (finished(s)) emit(s.dag);
  if (s.dag.num_ops() >= max_ops_) return;
  const int n = int(s.dag.values.size());
  std::optional<Key> last;
  if (s.dag.num_ops() > 0) last = key_of(s.dag.values.back());

  auto consider = [&](DagValue v) {
    if (last && !(key_of(v) > *last)) return;  // not the canonical order
    auto shape = shape_of(v, s.dag.values);
    if (!shape) {
      counters_.pruned_dims++;
      return;
    }
    v.type = Type{DType::F32, *shape, false};
    // Dead ops after adding v: v itself, minus the dead operands it revives.
    int revived = 0;
    for (size_t k = 0; k < v.operands.size(); ++k) {
      int o = v.operands[k];
      if (o >= s.dag.num_inputs && s.users[size_t(o)] == 0 && (k == 0 || o != v.operands[0])) ++revived;
    }
    const int dead = s.dead + 1 - revived;
    const int remaining = max_ops_ - (s.dag.num_ops() + 1);
    if (dead - 1 > remaining) {
      counters_.pruned_structure++;
      return;
    }
    if (expr_) {
      std::vector<eg::Id> kids;
      for (int o : v.operands) kids.push_back(s.dag.values[size_t(o)].cls);
      v.cls = expr_->lookup(v, kids);
      if (v.cls == eg::kNoId) {
        counters_.pruned_expression++;
        return;
      }
      // Every value nobody reads yet must still reach the root: as many ops as its distance.
      int needed = expr_->distance_to_root(v.cls);
      for (int o = s.dag.num_inputs; o < n && needed <= remaining; ++o)
        if (s.users[size_t(o)] == 0 && std::find(v.operands.begin(), v.operands.end(), o) == v.operands.end())
          needed = std::max(needed, expr_->distance_to_root(s.dag.values[size_t(o)].cls));
      if (needed > remaining) {
        counters_.pruned_expression++;
        return;
      }
    }
    counters_.generated++;
    auto descend = [this, &emit, &stop, &spawn, spawn_depth, dead](State& t, const DagValue& op) {
      for (int o : op.operands) t.users[size_t(o)]++;
      t.dag.values.push_back(op);
      t.users.push_back(0);
      t.dead = dead;
      expand(t, emit, stop, spawn, spawn_depth);
    };
    if (s.dag.num_ops() < spawn_depth) {
      auto copy = std::make_shared<State>(s);
      spawn([copy, v, descend]() mutable { descend(*copy, v); });
    } else {
      const int dead_before = s.dead;
      descend(s, v);
      s.dag.values.pop_back();
      s.users.pop_back();
      for (int o : v.operands) s.users[size_t(o)]--;
      s.dead = dead_before;
    }
  };

  for (int a = 0; a < n; ++a) {
    for (Op op : unary_) consider(DagValue{op, -1, {a}, {}, "", {}, {}, eg::kNoId});
    for (Op op : kReduce)
      for (int axis = 0; axis < int(s.dag.values[size_t(a)].type.shape.size()); ++axis) consider(DagValue{op, axis, {a}, {}, "", {}, {}, eg::kNoId});
    for (int b = 0; b < n; ++b) {
      for (Op op : binary_)
        if (!commutative(op) || a <= b) consider(DagValue{op, -1, {a, b}, {}, "", {}, {}, eg::kNoId});
      consider(DagValue{Op::Matmul, -1, {a, b}, {}, "", {}, {}, eg::kNoId});
    }
  }
}

}  // namespace prism::search
