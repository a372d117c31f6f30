#include "engine/search/verify.h"

#include <tbb/enumerable_thread_specific.h>

#include <cmath>

#include "engine/error.h"
#include "engine/interp/half.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/infer_shapes.h"
#include "engine/ir/print.h"
#include "engine/sgraph/evaluate.h"

namespace prism::search {

namespace {

struct Builder {
  Program p;
  int add(Op op, std::vector<int> operands, Attrs attrs = {}) {
    Value v;
    v.id = int(p.values.size());
    v.op = op;
    v.name = "t" + std::to_string(v.id);
    v.operands = std::move(operands);
    if (op == Op::Const) {
      v.type = Type{DType::F32, {}, true};
    } else {
      std::vector<Type> types;
      for (int o : v.operands) types.push_back(p.value(o).type);
      Inferred r = infer_type(op, attrs, types);
      if (!r.type) throw Error(Error::Kind::Failed, "split term: " + r.error);
      v.type = *r.type;
      v.type.dtype = DType::F32;
    }
    v.attrs = std::move(attrs);
    p.values.push_back(std::move(v));
    return int(p.values.size()) - 1;
  }
  int reshape(int x, std::vector<Dim> shape) {
    Attrs a;
    a.shape = std::move(shape);
    return add(Op::Reshape, {x}, a);
  }
  int reduce(Op op, int x, int axis) {
    Attrs a;
    a.axis = axis;
    a.keepdims = true;
    return add(op, {x}, a);
  }
  const std::vector<Dim>& shape(int x) const { return p.value(x).type.shape; }
  // sum over `axis` of x written as the sum over [f, K/f]: the partial sums of f pieces.
  int split_sum(int x, int axis, const Dim& f) {
    std::vector<Dim> s = shape(x), cut;
    const Dim k = s[size_t(axis)];
    cut.insert(cut.end(), s.begin(), s.begin() + axis);
    cut.push_back(f);
    cut.push_back(k / f);
    cut.insert(cut.end(), s.begin() + axis + 1, s.end());
    int y = reduce(Op::Sum, reduce(Op::Sum, reshape(x, cut), axis + 1), axis);
    s[size_t(axis)] = Dim(1);
    return reshape(y, s);
  }
};

double relative_error(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape) return INFINITY;
  double diff = 0, scale = 1;
  for (size_t i = 0; i < a.data.size(); ++i) {
    double d = std::fabs(double(a.data[i]) - double(b.data[i]));
    if (std::isnan(d)) return INFINITY;
    diff = std::max(diff, d);
    scale = std::max(scale, double(std::fabs(b.data[i])));
  }
  return diff / scale;
}

constexpr double kTolerance = 2e-2;  // f16 outputs; a wrong map is off by O(1)

}  // namespace

Program split_term(const Dag& dag, const std::vector<Dim>& split) {
  Builder b;
  b.p.name = "family";
  std::vector<int> at;
  for (size_t i = 0; i < dag.values.size(); ++i) {
    const DagValue& d = dag.values[i];
    if (d.op == Op::Input) {
      Value v;
      v.id = int(b.p.values.size());
      v.op = Op::Input;
      v.name = d.name;
      v.named = true;
      v.type = d.type;
      b.p.values.push_back(v);
      b.p.inputs.push_back(v.id);
      at.push_back(v.id);
      continue;
    }
    std::vector<int> ops;
    for (int o : d.operands) ops.push_back(at[size_t(o)]);
    const Dim f = split[i];
    if (f == Dim(1)) {
      Attrs a;
      if (is_reduction(d.op)) {
        a.axis = d.axis;
        a.keepdims = true;
      }
      at.push_back(b.add(d.op, ops, a));
      continue;
    }
    if (d.op == Op::Matmul) {
      // [.., n, K] x [.., K, m] = sum over the pieces of (a as [.., n, f, K/f, 1]) * (b as [.., 1, f, K/f, m]).
      std::vector<Dim> sa = b.shape(ops[0]), sb = b.shape(ops[1]);
      const size_t r = sa.size();
      const Dim k = sa[r - 1];
      std::vector<Dim> ca(sa.begin(), sa.end() - 1), cb(sb.begin(), sb.end() - 2);
      ca.insert(ca.end(), {f, k / f, Dim(1)});
      cb.insert(cb.end(), {Dim(1), f, k / f, sb[r - 1]});
      int prod = b.add(Op::Mul, {b.reshape(ops[0], ca), b.reshape(ops[1], cb)});
      int s = b.reduce(Op::Sum, b.reduce(Op::Sum, prod, int(r)), int(r) - 1);
      std::vector<Dim> out = dag.values[i].type.shape;
      at.push_back(b.reshape(s, out));
    } else if (d.op == Op::Sum) {
      at.push_back(b.split_sum(ops[0], d.axis, f));
    } else if (d.op == Op::Rms) {
      // rms_accumulate: sqrt(sum of squares over all pieces / K).
      Attrs k;
      k.constant.exact = b.shape(ops[0])[size_t(d.axis)];
      int total = b.split_sum(b.add(Op::Mul, {ops[0], ops[0]}), d.axis, f);
      at.push_back(b.add(Op::Sqrt, {b.add(Op::Div, {total, b.add(Op::Const, {}, k)})}));
    } else {
      // max over pieces: the max of the pieces' maxes.
      std::vector<Dim> s = b.shape(ops[0]), cut;
      const Dim kk = s[size_t(d.axis)];
      cut.insert(cut.end(), s.begin(), s.begin() + d.axis);
      cut.push_back(f);
      cut.push_back(kk / f);
      cut.insert(cut.end(), s.begin() + d.axis + 1, s.end());
      int y = b.reduce(Op::Max, b.reduce(Op::Max, b.reshape(ops[0], cut), d.axis + 1), d.axis);
      s[size_t(d.axis)] = Dim(1);
      at.push_back(b.reshape(y, s));
    }
  }
  b.p.outputs.push_back(at.back());
  for (const Value& v : b.p.values)
    for (const Dim& dim : v.type.shape)
      for (const std::string& s : dim.symbols())
        if (std::find(b.p.dims.begin(), b.p.dims.end(), s) == b.p.dims.end()) b.p.dims.push_back(s);
  return b.p;
}

DimBindings check_sizes(const sgraph::SGraph& family) {
  static const std::map<std::string, int64_t> kSizes = {{"g1", 2}, {"g2", 3}, {"g3", 2}, {"g4", 3}, {"F1", 4}};
  DimBindings sizes;
  for (const std::string& p : family.parameters()) {
    auto it = kSizes.find(p);
    sizes[p] = it == kSizes.end() ? 2 : it->second;
  }
  return sizes;
}

NumericCheck::NumericCheck(const Program& target) : target_(target) {
  // Distinct multiples of 24: every product of the check sizes on one dim (2*4, 3*4) divides them.
  for (size_t i = 0; i < target.dims.size(); ++i) dims_[target.dims[i]] = int64_t(24 * (i + 1));
  for (int id : target.inputs) {
    const Value& v = target.value(id);
    // Scaled to [-1/4, 1/4): exp of a dot product over a few dozen terms must not overflow f16.
    Tensor t = random_tensor(v.type.dtype, concrete_shape(v.type.shape, dims_), 17, v.name);
    for (float& x : t.data) x *= 0.25f;
    round_all(t.dtype, t.data.data(), t.data.size());
    inputs_[v.name] = std::move(t);
  }
  reference_ = interpret(target, dims_, inputs_).at(0);
}

std::optional<std::string> NumericCheck::mismatch(const sgraph::SGraph& family, const CancelToken* cancel) const {
  try {
    sgraph::Target roomy{"check", int64_t(1) << 40};
    sgraph::Instance inst = sgraph::instantiate(family, dims_, check_sizes(family), roomy);
    Tensor got = sgraph::evaluate(inst, inputs_, cancel).at(0);
    double err = relative_error(got, reference_);
    if (err > kTolerance) return "differs from the reference by " + std::to_string(err) + " (relative)";
    return std::nullopt;
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Cancelled) throw;
    return std::string("does not instantiate: ") + e.what();
  }
}

bool NumericCheck::dag_matches(const Dag& dag, const CancelToken* cancel) const {
  try {
    Tensor got = interpret(dag.to_program("dag"), dims_, inputs_, cancel).at(0);
    return relative_error(got, reference_) <= kTolerance;
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Cancelled) throw;
    return false;
  }
}

struct Prover::PerThread {
  tbb::enumerable_thread_specific<std::unique_ptr<ResidentEGraph>> graphs;
};

Prover::Prover(const Program& target) : target_(target), threads_(std::make_unique<PerThread>()) {}
Prover::~Prover() = default;

Proof Prover::prove(const Program& term, const CancelToken* cancel) {
  const std::string key = print_program(term);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return *it->second;
  }
  auto& g = threads_->graphs.local();
  if (!g) g = std::make_unique<ResidentEGraph>(600000);
  EquivResult r = g->prove(term, target_, EquivLimits{150000, 30, 4.0}, cancel);
  if (r.stop_reason == StopReason::Cancelled) throw Error(Error::Kind::Cancelled, "cancelled");
  Proof p;
  p.proved = r.verdict == EquivResult::Verdict::Proved;
  p.text = "family term:  " + r.a_text + "\nprogram term: " + r.b_text + "\n";
  p.text += p.proved ? "proved (" + std::string(stop_reason_name(r.stop_reason)) + "):\n" + r.explanation : r.message;
  std::lock_guard<std::mutex> lock(mutex_);
  cache_.emplace(key, std::make_shared<const Proof>(p));
  return p;
}

}  // namespace prism::search
