#include "engine/search/verify.h"

#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

#include "engine/egraph/from_program.h"
#include "engine/error.h"
#include "engine/interp/float_edges.h"
#include "engine/interp/half.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/infer_shapes.h"
#include "engine/ir/input_roles.h"
#include "engine/ir/print.h"
#include "engine/sgraph/evaluate.h"

namespace prism::search {

namespace {

// The largest difference over the reference's largest finite magnitude, or over 1 when that is
// larger (outputs near zero are compared absolutely). A reference value that is NaN or infinite
// is matched only by the same (an infinity once made the scale infinite and every error 0).
double relative_error(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape) return INFINITY;
  double diff = 0, scale = 1;
  for (size_t i = 0; i < a.data.size(); ++i) {
    if (!std::isfinite(b.data[i])) {
      if (a.data[i] == b.data[i] || (std::isnan(a.data[i]) && std::isnan(b.data[i]))) continue;
      return INFINITY;
    }
    double d = std::fabs(double(a.data[i]) - double(b.data[i]));
    if (std::isnan(d)) return INFINITY;
    diff = std::max(diff, d);
    scale = std::max(scale, double(std::fabs(b.data[i])));
  }
  return diff / scale;
}

constexpr double kTolerance = 2e-2;  // f16 outputs; a wrong map is off by O(1)

}  // namespace

std::string family_key(const Dag& dag, const Family& family) {
  std::string key = dag.key();
  key += " | split";
  for (const Dim& f : family.split) key.append(" ").append(f.canonical());
  for (const GridCut& c : family.cuts) {
    key.append(" | cut ").append(c.size.canonical()).append(" ").append(c.size2.canonical()).append(":");
    for (int a : c.axis) key.append(" ").append(std::to_string(a));
  }
  key += family.combining ? " | kernels" : " | kernel";
  for (int k : family.kernel) key.append(" ").append(std::to_string(k));
  return key;
}

DimBindings check_sizes(const sgraph::SGraph& family) {
  static const std::map<std::string, int64_t> kSizes = {{"g1", 2}, {"g2", 3}, {"g3", 2}, {"g4", 3}, {"F1", 2}};
  DimBindings sizes;
  for (const std::string& p : family.parameters()) {
    auto it = kSizes.find(p);
    sizes[p] = it == kSizes.end() ? 2 : it->second;
  }
  return sizes;
}

NumericCheck::NumericCheck(const Program& program, const CancelToken* cancel) : program_(program), dims_(check_dims(program)) {
  // Inside each input's domain (random_inputs), scaled to [-1/4, 1/4): exp of a dot product over
  // a few dozen terms must not overflow f16.
  random_inputs(program, dims_, 17, &inputs_);
  std::map<std::string, Tensor> drawn = inputs_;
  for (auto& [name, t] : inputs_) {
    for (float& x : t.data) x *= 0.25f;
    round_all(t.dtype, t.data.data(), t.data.size());
  }
  reference_ = interpret(program, dims_, inputs_, cancel);
}

namespace {

// Every value at f32 (inputs too: they arrive rounded to their declared dtypes).
Program widened(Program p) {
  for (Value& v : p.values) v.type.dtype = DType::F32;
  return p;
}

// Activations (and mask candidates, which may be the scores of S + M) drawn in [-1, 1) times
// 100 sqrt(3): std 100. Weights stay as seeded.
std::map<std::string, Tensor> std_100(const Program& program, const DimBindings& dims, const std::map<std::string, Tensor>& seeded) {
  std::map<std::string, Tensor> drawn, named = seeded;
  random_inputs(program, dims, 17, &drawn);
  const InputRoles roles = input_roles(program);
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    if (roles.weight[i]) continue;
    Tensor& t = named[program.value(program.inputs[i]).name] = drawn.at(program.value(program.inputs[i]).name);
    for (float& x : t.data) x *= float(100 * std::sqrt(3.0));
    round_all(t.dtype, t.data.data(), t.data.size());
  }
  return named;
}

}  // namespace

const std::vector<NumericCheck::EdgeSet>& NumericCheck::edge_sets(const CancelToken* cancel) const {
  std::call_once(edges_once_, [&] {
    tbb::this_task_arena::isolate([&] {
      wide_program_ = widened(program_);
      std::vector<std::pair<std::string, std::map<std::string, Tensor>>> sets;
      sets.emplace_back("activations of std 100", std_100(program_, dims_, inputs_));
      for (const FloatEdge& e : float_edges(program_, dims_, inputs_, 17)) sets.emplace_back(e.name, e.make());
      for (auto& [name, inputs] : sets) {
        // A set on which the program itself overflows judges nothing (float_edges.h).
        std::vector<Tensor> declared = interpret(with_every_value(program_), dims_, inputs, cancel);
        if (overflowed(declared, inputs) || overflows_inside(wide_program_, dims_, inputs, cancel)) continue;
        declared.resize(program_.outputs.size());
        EdgeSet set{name, std::move(inputs), std::move(declared), {}, {}, {}};
        set.exact = interpret_exact_sums(wide_program_, dims_, set.inputs, cancel);
        set.wide = interpret_as_kernels(wide_program_, dims_, set.inputs, cancel);
        for (size_t o = 0; o < set.exact.size(); ++o) set.wide_error.push_back(error_where_finite(set.wide[o], set.exact[o], set.wide[o]));
        edge_sets_.push_back(std::move(set));
      }
    });
  });
  return edge_sets_;
}

std::optional<std::string> NumericCheck::overflows(const sgraph::Instance& family, const CancelToken* cancel) const {
  for (const EdgeSet& set : edge_sets(cancel)) {
    std::vector<Tensor> got = tbb::this_task_arena::isolate([&] { return sgraph::evaluate(family, set.inputs, cancel); });
    for (size_t o = 0; o < got.size() && o < set.declared.size(); ++o) {
      int64_t bad = 0;
      for (size_t i = 0; i < got[o].data.size() && i < set.declared[o].data.size(); ++i)
        bad += std::isfinite(set.declared[o].data[i]) && !std::isfinite(got[o].data[i]);
      if (bad > 0)
        return "overflows: " + std::to_string(bad) + " values of output " + std::to_string(o) + " are NaN or infinite on " + set.name +
               " where the program's are finite";
    }
  }
  return std::nullopt;
}

std::optional<std::string> NumericCheck::mismatch(const sgraph::SGraph& family, const CancelToken* cancel) const {
  try {
    sgraph::TileBudget roomy{int64_t(1) << 40};
    sgraph::Instance inst = sgraph::instantiate(family, dims_, check_sizes(family), roomy);
    // The interpreter's matmul may run a parallel loop: isolated, a waiting worker takes only
    // its pieces, never another family's verification (which would hold this one up).
    std::vector<Tensor> got = tbb::this_task_arena::isolate([&] { return sgraph::evaluate(inst, inputs_, cancel); });
    if (got.size() != reference_.size()) return "has " + std::to_string(got.size()) + " outputs, not " + std::to_string(reference_.size());
    for (size_t o = 0; o < got.size(); ++o) {
      double err = relative_error(got[o], reference_[o]);
      if (err > kTolerance) return "differs from the reference by " + std::to_string(err) + " (relative) in output " + std::to_string(o);
    }
    return overflows(inst, cancel);
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Cancelled) throw;
    return std::string("does not instantiate: ") + e.what();
  }
}

namespace {

// The DAG as a program over `program`'s parameters.
Program dag_program(const Dag& dag, const Program& program) {
  std::vector<const Value*> params;
  for (int id : program.inputs) params.push_back(&program.value(id));
  return dag.to_program("dag", params);
}

}  // namespace

bool NumericCheck::dag_matches(const Dag& dag, const CancelToken* cancel) const {
  try {
    std::vector<Tensor> got = tbb::this_task_arena::isolate([&] { return interpret(dag_program(dag, program_), dims_, inputs_, cancel); });
    if (got.size() != reference_.size()) return false;
    for (size_t o = 0; o < got.size(); ++o)
      if (relative_error(got[o], reference_[o]) > kTolerance) return false;
    return true;
  } catch (const Error& e) {  // building or running it fails: no match
    if (e.kind() == Error::Kind::Cancelled) throw;
    return false;
  }
}

std::optional<std::string> NumericCheck::unstable(const Dag& dag, const CancelToken* cancel) const {
  const std::vector<EdgeSet>& sets = edge_sets(cancel);
  Program form;
  try {
    form = widened(dag_program(dag, wide_program_));
  } catch (const Error& e) {
    return std::string("does not build: ") + e.what();
  }
  for (const EdgeSet& set : sets) {
    std::vector<Tensor> got;
    try {
      got = tbb::this_task_arena::isolate([&] { return interpret_as_kernels(form, dims_, set.inputs, cancel); });
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::Cancelled) throw;
      return "does not run on " + set.name + ": " + e.what();
    }
    for (size_t o = 0; o < got.size() && o < set.exact.size(); ++o) {
      const double allowed = 4 * set.wide_error[o] + dtype_tolerance(program_.value(program_.outputs[o]).type.dtype);
      const double error = error_where_finite(got[o], set.exact[o], set.wide[o]);
      if (error <= allowed) continue;
      return "on " + set.name + ", output " + std::to_string(o) +
             (std::isinf(error) ? " has NaN or infinite values where the program's are finite"
                                : " is off by " + std::to_string(error) + " (relative) where the program is within " + std::to_string(set.wide_error[o]));
    }
  }
  return std::nullopt;
}

Prover::Prover(const Program& program) : program_(program) {}

Proof Prover::prove(const Dag& dag, const Family& family, const CancelToken* cancel) {
  const std::string key = family_key(dag, family);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return *it->second;
  }
  // A fresh e-graph per proof: a proof never depends on which thread ran it or what it proved
  // before (one e-graph that kept every earlier family's terms made each later proof match over
  // all of them: slower and slower, and its node cap made verdicts depend on the order).
  // Each output is its own proof: the family's term of that output against the program's.
  Proof p;
  p.proved = true;
  for (size_t o = 0; o < program_.outputs.size() && p.proved; ++o) {
    auto g = std::make_unique<ResidentEGraph>(600000);
    auto build = [&](eg::TensorGraph& tg) { return family_term(tg, dag, family, o); };
    // The program with output o alone (a copy only when there are several).
    Program one;
    if (program_.outputs.size() > 1) {
      one = program_;
      one.outputs = {program_.outputs[o]};
    }
    const Program& target = program_.outputs.size() > 1 ? one : program_;
    EquivResult r;
    try {
      r = g->prove(build, target, EquivLimits{150000, 30, 4.0}, cancel);
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::Cancelled) throw;
      r.verdict = EquivResult::Verdict::NotProved;
      r.message = e.what();
    } catch (const std::logic_error& e) {  // an ill-shaped family term: nothing to prove
      r.verdict = EquivResult::Verdict::NotProved;
      r.message = e.what();
    }
    if (r.stop_reason == StopReason::Cancelled) throw Error(Error::Kind::Cancelled, "cancelled");
    p.proved = r.verdict == EquivResult::Verdict::Proved;
    if (program_.outputs.size() > 1) p.text += "output " + program_.value(program_.outputs[o]).name + ":\n";
    p.text += "family term:  " + r.a_text + "\nprogram term: " + r.b_text + "\n";
    p.text += p.proved ? "proved (" + std::string(stop_reason_name(r.stop_reason)) + "):\n" + r.explanation : r.message;
    if (program_.outputs.size() > 1 && p.text.back() != '\n') p.text += "\n";
  }
  std::lock_guard<std::mutex> lock(mutex_);
  cache_.emplace(key, std::make_shared<const Proof>(p));
  return p;
}

}  // namespace prism::search
