#include "engine/search/verify.h"

#include <tbb/task_arena.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

#include "engine/egraph/from_program.h"
#include "engine/error.h"
#include "engine/interp/half.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/infer_shapes.h"
#include "engine/ir/input_roles.h"
#include "engine/ir/print.h"
#include "engine/sgraph/evaluate.h"

namespace prism::search {

namespace {

// The largest difference over the reference's largest magnitude, or over `floor` when that is
// larger (outputs near zero are compared absolutely).
double relative_error(const Tensor& a, const Tensor& b, double floor = 1) {
  if (a.shape != b.shape) return INFINITY;
  double diff = 0, scale = floor;
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

DimBindings check_dims(const Program& program) {
  // Distinct multiples of 12: every product of the check sizes on one dim (2*2, 3*2) divides
  // them. Small, so that a program of rank-4 tensors over five dims ([b, h, s, e] attention)
  // stays a few MB at these dims (multiples of 24 made it 16x larger and its checks that slower).
  DimBindings dims;
  for (size_t i = 0; i < program.dims.size(); ++i) dims[program.dims[i]] = int64_t(12 * (i + 1));
  return dims;
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
  // The draw in [-1, 1) has std 1/sqrt(3).
  const InputRoles roles = input_roles(program);
  bool any = false;
  large_inputs_ = inputs_;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    if (!roles.activation(i)) continue;
    Tensor& t = large_inputs_[program.value(program.inputs[i]).name] = drawn.at(program.value(program.inputs[i]).name);
    for (float& x : t.data) x *= float(100 * std::sqrt(3.0));
    round_all(t.dtype, t.data.data(), t.data.size());
    any = true;
  }
  if (any) large_reference_ = interpret(program, dims_, large_inputs_, cancel);
  else large_inputs_.clear();
}

std::optional<std::string> NumericCheck::overflows(const sgraph::Instance& family, const CancelToken* cancel) const {
  if (large_reference_.empty()) return std::nullopt;
  std::vector<Tensor> got = tbb::this_task_arena::isolate([&] { return sgraph::evaluate(family, large_inputs_, cancel); });
  for (size_t o = 0; o < got.size() && o < large_reference_.size(); ++o) {
    int64_t bad = 0;
    for (size_t i = 0; i < got[o].data.size() && i < large_reference_[o].data.size(); ++i)
      bad += std::isfinite(large_reference_[o].data[i]) && !std::isfinite(got[o].data[i]);
    if (bad > 0)
      return "overflows: " + std::to_string(bad) + " values of output " + std::to_string(o) +
             " are NaN or infinite on activations of std 100 where the program's are finite";
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

// Every value at f32 (inputs too: they arrive rounded to their declared dtypes).
Program widened(Program p) {
  for (Value& v : p.values) v.type.dtype = DType::F32;
  return p;
}

// The DAG as a program over `program`'s parameters.
Program dag_program(const Dag& dag, const Program& program) {
  std::vector<const Value*> params;
  for (int id : program.inputs) params.push_back(&program.value(id));
  return dag.to_program("dag", params);
}

}  // namespace

bool NumericCheck::dag_matches(const Dag& dag, const CancelToken* cancel) const {
  return matches([&] { return dag_program(dag, program_); }, inputs_, reference_, 1, cancel);
}

bool NumericCheck::dag_matches_offset(const Dag& dag, const CancelToken* cancel) const {
  // Both the program and the DAG computed at f32, as kernels accumulate: what is judged is the
  // form's cancellation, not the rounding of a 16-bit program's every op (which on data moved
  // by 8 leaves a bf16 row only a few distinct values, whatever the form).
  std::call_once(offset_once_, [&] {
    offset_program_ = widened(program_);
    offset_inputs_ = inputs_;
    for (auto& [name, t] : offset_inputs_) {
      for (float& x : t.data) x += kOffset;
      round_all(t.dtype, t.data.data(), t.data.size());
    }
    offset_reference_ = tbb::this_task_arena::isolate([&] { return interpret(offset_program_, dims_, offset_inputs_); });
  });
  // Relative to the outputs' own magnitude, however small: a variance of these inputs is about
  // 0.02, below the usual floor of 1, and an error as large as it must not pass.
  return matches([&] { return widened(dag_program(dag, offset_program_)); }, offset_inputs_, offset_reference_, 1e-30, cancel);
}

bool NumericCheck::matches(const std::function<Program()>& form, const std::map<std::string, Tensor>& inputs,
                           const std::vector<Tensor>& reference, double floor, const CancelToken* cancel) const {
  try {
    std::vector<Tensor> got = tbb::this_task_arena::isolate([&] { return interpret(form(), dims_, inputs, cancel); });
    if (got.size() != reference.size()) return false;
    for (size_t o = 0; o < got.size(); ++o)
      if (relative_error(got[o], reference[o], floor) > kTolerance) return false;
    return true;
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Cancelled) throw;
    return false;
  }
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
