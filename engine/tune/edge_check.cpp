#include "engine/tune/edge_check.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "engine/backend/storage.h"
#include "engine/interp/float_edges.h"
#include "engine/interp/interpreter.h"
#include "engine/tune/tuner_steps.h"

namespace prism::tune {

namespace {

// How far a sum in another order moves an f32 value, relative to itself.
constexpr float kSumOrderStep = 1.0f / (1 << 18);
// How many draws of signs the moved reference takes the farthest of.
constexpr uint64_t kMovedPatterns = 4;

bool nowhere_finite(const std::vector<Tensor>& reference) {
  for (const Tensor& t : reference)
    for (float v : t.data)
      if (std::isfinite(v)) return false;
  return true;
}

// The checked items on this set: the baseline (0) while it passes, and every row that passes.
std::vector<size_t> live_items(const TuneResult& result) {
  std::vector<size_t> items;
  if (result.baseline_error.empty()) items.push_back(0);
  for (size_t i = 0; i < result.rows.size(); ++i)
    if (result.rows[i].ok) items.push_back(i + 1);
  return items;
}

// `tensors` with 0 where the set's reference is not finite (as the outputs compared are).
std::vector<Tensor> zero_where_not_finite(std::vector<Tensor> tensors, const InputSet& set) {
  for (size_t o = 0; o < tensors.size() && o < set.reference.size(); ++o)
    for (size_t i = 0; i < tensors[o].data.size(); ++i)
      if (!std::isfinite(set.reference[o].data[i])) tensors[o].data[i] = 0;
  return tensors;
}

// Each output's largest error against the set's reference where that is finite, over the
// reference's magnitude there (float_edges.h's error_where_finite; infinite where `got` is not).
std::vector<double> errors_on_set(const std::vector<Tensor>& got, const InputSet& set) {
  std::vector<double> errors;
  for (size_t o = 0; o < got.size() && o < set.reference.size(); ++o)
    errors.push_back(error_where_finite(got[o], set.reference[o], set.reference[o]));
  return errors;
}

}  // namespace

SetReferenceCache::SetReferenceCache(const Program& program, const DimBindings& dims, const InputSet& set, const CancelToken* cancel)
    : dims_(dims), set_(set), cancel_(cancel), wide_(backend::with_storage(program, DType::F32)),
      steps_(rounding_steps(program, set.conditioned ? kSumOrderStep : 0)) {}

SetReferences SetReferenceCache::references() {
  SetReferences r{[this]() -> const std::vector<Tensor>& { return exact(); }, [this]() -> const std::vector<Tensor>& { return moved(); }};
  if (std::all_of(steps_.begin(), steps_.end(), [](float step) { return step == 0; })) r.moved = nullptr;
  return r;
}

const std::vector<Tensor>& SetReferenceCache::exact() {
  if (!exact_) exact_ = interpret(wide_, dims_, set_.named, cancel_);
  return *exact_;
}

// Per element, the farthest from exact of kMovedPatterns draws of signs: near a tie (two logits a
// rounding apart) one draw may leave it where a kernel's own roundings break it.
const std::vector<Tensor>& SetReferenceCache::moved() {
  if (moved_) return *moved_;
  const std::vector<Tensor>& e = exact();
  moved_ = e;
  for (uint64_t pattern = 0; pattern < kMovedPatterns; ++pattern) {
    const std::vector<Tensor> draw = interpret_moved(wide_, dims_, set_.named, steps_, pattern, cancel_);
    for (size_t o = 0; o < e.size(); ++o)
      for (size_t i = 0; i < e[o].data.size(); ++i) {
        float& far = (*moved_)[o].data[i];
        const float x = draw[o].data[i], at = e[o].data[i];
        if (std::isnan(x) || std::fabs(x - at) > std::fabs(far - at)) far = x;
      }
  }
  return *moved_;
}

bool no_worse_than_eager(const std::vector<Tensor>& got, const std::vector<Tensor>& eager, const InputSet& set) {
  const std::vector<double> errors = errors_on_set(got, set), allowed = errors_on_set(eager, set);
  if (errors.size() != set.reference.size() || allowed.size() != errors.size()) return false;
  for (size_t o = 0; o < errors.size(); ++o)  // a baseline that is not finite where the reference is allows nothing
    if (!std::isfinite(allowed[o]) || !(errors[o] <= 2 * allowed[o])) return false;
  return true;
}

Comparison compare_on_set(const backend::Backend& backend, std::vector<Tensor> got, const InputSet& set, const std::vector<DType>& dtypes,
                          const SetReferences& references) {
  Comparison c;
  if (got.size() != set.reference.size()) {
    c.failure = std::to_string(got.size()) + " outputs, expected " + std::to_string(set.reference.size());
    return c;
  }
  std::vector<Tensor> want = set.reference;
  for (size_t o = 0; o < got.size(); ++o)
    if (std::optional<std::string> bad = mask_non_finite_reference(got[o], want[o], nullptr)) {
      c.failure = "output " + std::to_string(o) + " " + *bad;
      c.max_error = INFINITY;
      return c;
    }
  std::optional<std::vector<Tensor>> exact;
  auto masked_exact = [&]() -> const std::vector<Tensor>& {
    if (!exact) exact = zero_where_not_finite(references.exact(), set);
    return *exact;
  };
  c = steps::check_outputs(backend, got, want, dtypes, masked_exact);
  if (!c.failure || !references.moved) return c;
  // Ill-conditioned on these inputs? The second chance, output by output.
  const std::vector<Tensor> moved = zero_where_not_finite(references.moved(), set);
  Comparison all;
  for (size_t o = 0; o < got.size(); ++o) {
    const backend::Tolerance tol = backend.tolerance(dtypes[o]);
    Comparison one = compare_conditioned(got[o], want[o], masked_exact()[o], moved[o], unit_roundoff(dtypes[o]), tol.rtol, tol.atol);
    all.max_error = std::max(all.max_error, one.max_error);
    if (one.failure && !all.failure) all.failure = "output " + std::to_string(o) + one.failure->substr(std::string("output 0").size());
  }
  return all;
}

void check_edge_sets(TuneResult& result, const std::vector<MakeInputSet>& sets, const EdgeContext& context, const CancelToken* cancel,
                     const std::function<void(const std::string& phase, int done, int total)>& report) {
  const int total = int(sets.size());
  for (int k = 0; k < total; ++k) {
    report("edge cases", k, total);
    const std::vector<size_t> items = live_items(result);
    if (items.empty()) return;
    if (cancel) cancel->check();
    const InputSet set = sets[size_t(k)](cancel);
    result.edge_sets.push_back(set.name);
    if (!set.skip.empty()) {
      result.edge_notes.push_back(set.name + ": " + set.skip);
      continue;
    }
    if (nowhere_finite(set.reference)) {
      result.edge_notes.push_back(set.name + ": the reference is nowhere finite, nothing compared");
      continue;
    }
    SetReferenceCache cache(context.program, context.dims, set, cancel);
    const SetReferences references = cache.references();
    context.set_inputs(ordered_inputs(context.program, set));
    std::optional<std::vector<Tensor>> eager;  // its outputs, where the baseline missed this floating-point edge
    for (size_t item : items) {
      const backend::RunOutcome outcome = context.run(item);
      std::string failure = outcome.ok ? "" : outcome.error;
      if (outcome.ok)
        if (Comparison c = compare_on_set(context.backend, outcome.outputs, set, context.checked_dtypes, references); c.failure)
          failure = "wrong result on " + set.name + ": " + *c.failure;
      if (failure.empty()) continue;
      if (!outcome.ok) failure = "on " + set.name + ": " + failure;
      if (item == 0) {
        if (outcome.ok && !set.conditioned) eager = outcome.outputs;
        result.edge_notes.push_back("the eager baseline fails " + failure.substr(failure.find("on ") + 3) +
                                    (eager ? " (candidates are held to twice its error there)"
                                           : " (candidates are still checked against the reference there)"));
        result.transient = result.transient || outcome.transient;
        continue;
      }
      if (outcome.ok && eager) {
        if (no_worse_than_eager(outcome.outputs, *eager, set)) continue;
        failure += ", and more than twice the eager baseline's error";
      }
      TuneRow& row = result.rows[item - 1];
      row.ok = false;
      row.error = failure;
      row.transient = outcome.transient;
      result.transient = result.transient || outcome.transient;
    }
  }
  report("edge cases", total, total);
}

}  // namespace prism::tune
