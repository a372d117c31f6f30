#include "engine/tune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "engine/backend/print_kernel_ir.h"
#include "engine/backend/runner/runner.h"
#include "engine/backend/storage.h"
#include "engine/error.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/checked_dtypes.h"
#include "engine/ir/print.h"
#include "engine/pipeline.h"
#include "engine/sgraph/instantiate.h"
#include "engine/sgraph/print.h"
#include "engine/tune/compare.h"
#include "engine/tune/cost_model.h"
#include "engine/tune/edge_check.h"
#include "engine/tune/edge_suite.h"
#include "engine/tune/roofline.h"
#include "engine/tune/tuner_steps.h"
#include "engine/util/text.h"

namespace prism::tune {

namespace steps {

using Clock = std::chrono::steady_clock;

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The family's sizes only (the instance's bindings also hold the tensor dims).
DimBindings family_sizes(const sgraph::SGraph& graph, const DimBindings& all) {
  DimBindings sizes;
  for (const auto& p : graph.parameters()) sizes[p] = all.at(p);
  return sizes;
}

void check_bindings(const Program& lowered, const DimBindings& bindings) {
  for (const auto& dim : lowered.dims) {
    auto it = bindings.find(dim);
    if (it == bindings.end()) throw Error(Error::Kind::InvalidArgument, "missing binding for dim '" + dim + "'");
    if (it->second <= 0) throw Error(Error::Kind::InvalidArgument, "dim '" + dim + "' must be positive");
  }
  for (const auto& [name, value] : bindings)
    if (std::find(lowered.dims.begin(), lowered.dims.end(), name) == lowered.dims.end())
      throw Error(Error::Kind::InvalidArgument, "'" + name + "' is not a dim of " + lowered.name + " (its dims: " + join(lowered.dims, ", ") + ")", name);
}

std::shared_ptr<const RankedFamily> ranked_family(sgraph::SGraph graph, const DimBindings& dims) {
  auto family = std::make_shared<RankedFamily>();
  family->analysis = sgraph::analyze(graph);
  family->roles = graph.parameter_roles();
  family->graph = std::move(graph);
  family->dims = dims;
  return family;
}

sgraph::Instance Option::instance() const {
  sgraph::Instance instance{shared->graph, shared->dims, shared->analysis};
  instance.bindings.insert(sizes.begin(), sizes.end());
  return instance;
}

namespace {

// Every instantiation of every family whose tiles fit `budget`, in family order, priced; with
// `past`, only those whose tiles do not fit it (marked spilled).
std::vector<Option> priced_options(const std::vector<sgraph::SGraph>& graphs, const DimBindings& dims, const sgraph::TileBudget& budget,
                                   const backend::TargetDescription& target, const CancelToken* cancel,
                                   const sgraph::TileBudget* past = nullptr) {
  std::vector<Option> options;
  for (size_t f = 0; f < graphs.size(); ++f) {
    if (cancel) cancel->check();
    const std::shared_ptr<const RankedFamily> family = ranked_family(graphs[f], dims);
    sgraph::Instance probe{family->graph, dims, family->analysis};
    CostMemo memo;
    for (DimBindings& sizes : sgraph::enumerate(family->graph, dims, budget)) {
      probe.bindings = dims;
      probe.bindings.insert(sizes.begin(), sizes.end());
      if (past && !sgraph::check_bindings(family->analysis, probe.bindings, *past)) continue;
      Option o;
      o.family = f;
      o.shared = family;
      o.predicted_s = estimate_cost(probe, target, memo).seconds;
      o.sizes = std::move(sizes);
      o.spilled = past != nullptr;
      options.push_back(std::move(o));
    }
  }
  return options;
}

}  // namespace

// Every valid instantiation of every family, cheapest first by the cost model. Each is priced on
// one probe instance of its family whose bindings change (docs/tuning.md, "The flow of one
// `tune`", step 3). Those whose tiles fit the target's spill budget but not its tile budget are
// ranked after all that fit it, marked spilled (docs/tuning.md, "Tiles past the budget").
std::vector<Option> rank_options(const std::vector<sgraph::SGraph>& graphs, const DimBindings& dims,
                                 const backend::TargetDescription& target, const CancelToken* cancel) {
  const sgraph::TileBudget budget = target.tile_budget(), spill = target.spill_budget();
  auto cheapest_first = [](const Option& a, const Option& b) { return a.predicted_s < b.predicted_s; };
  std::vector<Option> options = priced_options(graphs, dims, budget, target, cancel);
  std::stable_sort(options.begin(), options.end(), cheapest_first);
  if (spill.fast_memory_bytes > budget.fast_memory_bytes) {
    std::vector<Option> past = priced_options(graphs, dims, spill, target, cancel, &budget);
    std::stable_sort(past.begin(), past.end(), cheapest_first);
    options.insert(options.end(), std::make_move_iterator(past.begin()), std::make_move_iterator(past.end()));
  }
  for (size_t i = 0; i < options.size(); ++i) options[i].rank = int(i) + 1;
  return options;
}

namespace {

// The tiling an option describes, by the roles of its parameters (grid size or loop range: read
// off its kernels, not off how the family names them): the grid sizes other than 1 and the loop
// ranges, each sorted. "F1=64 g1=8" and "F1=64 g1=1 g2=8" are one tiling.
std::string tiling_key(const Option& option) {
  std::vector<int64_t> grid, loop;
  for (const sgraph::SGraph::Parameter& p : option.shared->roles) {
    const int64_t value = option.sizes.at(p.name);
    if (p.role == sgraph::SGraph::Parameter::Role::Loop) loop.push_back(value);
    else if (value != 1) grid.push_back(value);
  }
  std::sort(grid.begin(), grid.end());
  std::sort(loop.begin(), loop.end());
  std::string key = "F";
  for (int64_t v : loop) key.append(" ").append(std::to_string(v));
  key += " g";
  for (int64_t v : grid) key.append(" ").append(std::to_string(v));
  return key;
}

}  // namespace

// The top K by cost, at most half of them (rounded up) from one family, so one family's many
// tile sizes cannot crowd out the others; and, while other tilings are left, at most a quarter
// with the same tiling, so families that differ only in how they order elementwise ops (the cost
// model ties them) cannot crowd out other tile sizes. The cheapest option with each number of
// vendor matmuls (library kernels: none, one, two, …) is always timed, and while others are left
// at most a quarter have one: the model cannot tell a vendor kernel's speed from a fused one's.
// Spilled options are chosen among only where none fits the budget; else, from K = 2 on, the
// cheapest of them takes the last of the K slots (the model prices a spilled block's scratch, not
// all a cache past the budget costs it: docs/tuning.md, "Tiles past the budget").
std::vector<size_t> choose(const std::vector<Option>& ranked, int top) {
  const bool fits = std::any_of(ranked.begin(), ranked.end(), [](const Option& o) { return !o.spilled; });
  const bool spills = fits && top >= 2 && std::any_of(ranked.begin(), ranked.end(), [](const Option& o) { return o.spilled; });
  if (spills) --top;
  auto eligible = [&](size_t i) { return !fits || !ranked[i].spilled; };
  std::vector<size_t> chosen;
  std::vector<bool> taken(ranked.size(), false);
  std::map<size_t, int> per_family;
  std::map<std::string, int> per_sizes;
  const int family_cap = std::max(1, (top + 1) / 2), sizes_cap = std::max(1, (top + 3) / 4);
  int vendors = 0;
  auto matmuls = [&](size_t i) {
    const auto& ks = ranked[i].shared->graph.kernels;
    return int(std::count_if(ks.begin(), ks.end(), [](const sgraph::Kernel& k) { return k.vendor_matmul(); }));
  };
  auto vendor = [&](size_t i) { return matmuls(i) > 0; };
  auto take = [&](size_t i) {
    taken[i] = true;
    ++per_family[ranked[i].family];
    ++per_sizes[tiling_key(ranked[i])];
    vendors += vendor(i);
    chosen.push_back(i);
  };
  std::set<int> counts;
  for (size_t i = 0; i < ranked.size(); ++i)
    if (eligible(i)) counts.insert(matmuls(i));
  for (int count : counts)
    for (size_t i = 0; i < ranked.size() && int(chosen.size()) < top; ++i)
      if (eligible(i) && matmuls(i) == count) {
        take(i);
        break;
      }
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < ranked.size() && int(chosen.size()) < top; ++i) {
      if (!eligible(i) || taken[i] || per_family[ranked[i].family] >= family_cap) continue;
      if (pass == 0 && (per_sizes[tiling_key(ranked[i])] >= sizes_cap || (vendor(i) && vendors >= sizes_cap))) continue;
      take(i);
    }
  if (spills)
    for (size_t i = 0; i < ranked.size(); ++i)
      if (ranked[i].spilled) {
        take(i);
        break;
      }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

std::vector<Option> timed_options(const std::vector<Option>& ranked, const std::vector<size_t>& chosen,
                                  const std::vector<backend::Schedule>& schedules, int explored) {
  std::vector<Option> timed;
  for (size_t i : chosen) {
    timed.push_back(ranked[i]);
    timed.back().schedule = schedules.front();
  }
  for (size_t c = 0; c < chosen.size() && int(c) < explored; ++c)
    for (size_t s = 1; s < schedules.size(); ++s) {
      timed.push_back(ranked[chosen[c]]);
      timed.back().schedule = schedules[s];
    }
  return timed;
}

std::vector<Option> scheduled_options(const std::vector<sgraph::SGraph>& graphs, const DimBindings& dims,
                                      const backend::TargetDescription& scheduled, const backend::Schedule& schedule,
                                      const CancelToken* cancel, int explored) {
  const std::vector<Option> ranked = rank_options(graphs, dims, scheduled, cancel);
  std::vector<Option> timed;
  for (size_t i : choose(ranked, explored)) {
    timed.push_back(ranked[i]);
    timed.back().schedule = schedule;
  }
  return timed;
}

Roofline stored_roofline(const Program& stored, const DimBindings& dims, const backend::TargetDescription& target) {
  const DType storage = stored.inputs.empty() ? DType::F32 : stored.value(stored.inputs.front()).type.dtype;
  backend::TargetDescription roof_target = target;
  roof_target.peak_gflops = roofline_peak_gflops(target, storage);
  return program_roofline(stored, dims, roof_target);
}

std::vector<Option> claimed_options(const std::vector<Option>& ranked, const std::vector<Candidate>& families,
                                    const std::vector<TuneRow>& claimed, const std::vector<backend::Schedule>& schedules) {
  std::vector<Option> out;
  std::set<std::pair<size_t, std::string>> seen;
  for (const TuneRow& row : claimed) {
    const auto match = std::find_if(ranked.begin(), ranked.end(), [&](const Option& o) {
      return families[o.family].hash == row.family && o.sizes == row.sizes;
    });
    if (match == ranked.end()) continue;
    const bool offered = std::find(schedules.begin(), schedules.end(), row.schedule) != schedules.end();
    Option option = *match;
    option.schedule = offered ? row.schedule : schedules.front();
    if (seen.insert({size_t(match - ranked.begin()), backend::schedule_text(option.schedule)}).second) out.push_back(std::move(option));
  }
  return out;
}

// Fault injection, to test that a bad kernel costs only its own candidate (docs/tuning.md):
// PRISM_FAULT_INJECT="crash@1,hang@2" replaces the 1st / 2nd chosen instantiation by a kernel that
// crashes / never returns (Backend::fault). Empty when unset.
std::map<size_t, std::string> planted_faults() {
  std::map<size_t, std::string> faults;
  const char* spec = std::getenv("PRISM_FAULT_INJECT");
  if (!spec) return faults;
  std::string text = spec;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() : comma + 1;
    auto at = item.find('@');
    if (at == std::string::npos) continue;
    size_t index = std::strtoul(item.c_str() + at + 1, nullptr, 10);
    if (index > 0) faults[index - 1] = item.substr(0, at);
  }
  return faults;
}

// PRISM_KERNEL_TIMEOUT (seconds) overrides a run's time limit.
double kernel_timeout_s(double fallback) {
  const char* v = std::getenv("PRISM_KERNEL_TIMEOUT");
  double t = v ? std::atof(v) : 0;
  return t > 0 ? t : fallback;
}

Comparison check_outputs(const backend::Backend& backend, const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                         const std::vector<DType>& dtypes, const std::function<const std::vector<Tensor>&()>& exact) {
  Comparison all;
  if (got.size() != want.size()) {
    all.failure = std::to_string(got.size()) + " outputs, expected " + std::to_string(want.size());
    return all;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const backend::Tolerance tol = backend.tolerance(dtypes[i]);
    Comparison c = compare_outputs({got[i]}, {want[i]}, tol.rtol, tol.atol);
    if (c.failure && dtypes[i] != DType::F32 && exact)
      c = compare_no_worse(got[i], want[i], exact().at(i), unit_roundoff(dtypes[i]));
    all.max_error = std::max(all.max_error, c.max_error);
    if (c.failure && !all.failure) all.failure = "output " + std::to_string(i) + c.failure->substr(std::string("output 0").size());
  }
  return all;
}

void record_run(TuneRow& row, const backend::RunOutcome& outcome, const std::function<Comparison(const std::vector<Tensor>&)>& check) {
  if (!outcome.ok) {
    row.error = outcome.error;
    row.transient = outcome.transient;
    return;
  }
  Comparison verdict = check(outcome.outputs);
  row.max_error = verdict.max_error;
  if (verdict.failure) {
    row.error = "wrong result: " + *verdict.failure;
    return;
  }
  row.ok = true;
  row.measured_ms = outcome.median_ms;
}

void check_items(TuneResult& result, const std::vector<Option>& timed, const std::vector<Candidate>& families,
                 const std::function<void(size_t item, TuneRow& row)>& check_item,
                 const std::function<void(const std::string& phase, int done, int total)>& report) {
  const int total = int(timed.size()) + 1;
  report("checking", 0, total);
  TuneRow baseline;
  check_item(0, baseline);
  if (baseline.ok) result.baseline_ms = baseline.measured_ms;
  else result.baseline_error = baseline.error;
  result.transient = baseline.transient;
  for (size_t i = 0; i < timed.size(); ++i) {
    report("checking", int(i) + 1, total);
    const Option& o = timed[i];
    TuneRow row;
    row.candidate = families[o.family].id;
    row.family = families[o.family].hash;
    row.summary = families[o.family].summary;
    row.sizes = std::map<std::string, int64_t>(o.sizes.begin(), o.sizes.end());
    row.schedule = o.schedule;
    row.cost_rank = o.rank;
    row.predicted_ms = o.predicted_s * 1e3;
    check_item(i + 1, row);
    result.transient = result.transient || row.transient;
    result.rows.push_back(std::move(row));
  }
}

Measurement time_rounds(TuneResult& result, const TimingPolicy& policy, const std::function<RoundTime(size_t item)>& time_item,
                        const LoadWatch& watch_load, const std::function<void(const std::string& phase, int done, int total)>& report) {
  // The items: the baseline (item 0) when it passed, then the rows that passed (item i + 1 is the
  // check's row i, in chosen order).
  const bool has_baseline = result.baseline_error.empty();
  std::vector<size_t> item_of;  // timed item -> check item
  if (has_baseline) item_of.push_back(0);
  for (size_t i = 0; i < result.rows.size(); ++i)
    if (result.rows[i].ok) item_of.push_back(i + 1);
  const int total = policy.rounds;
  report("timing", 0, total);
  Measurement m = measure_interleaved(
      item_of.size(), has_baseline, policy, [&](size_t k) { return time_item(item_of[k]); }, watch_load,
      [&](int attempt, int round) { report(attempt > 1 ? "timing again" : "timing", round, total); });
  for (size_t k = 0; k < item_of.size(); ++k) {
    const ItemTiming& t = m.items[k];
    if (item_of[k] == 0) {
      if (t.failed) result.baseline_error = t.error, result.baseline_ms = 0;
      else result.baseline_ms = t.median_ms;
      result.transient = result.transient || t.transient;
      continue;
    }
    TuneRow& row = result.rows[item_of[k] - 1];
    if (t.failed) {
      row.ok = false;
      row.error = t.error;
      row.transient = t.transient;
      result.transient = result.transient || t.transient;
      continue;
    }
    row.measured_ms = t.median_ms;
    row.spread = t.spread;
    row.noisy = t.spread >= policy.noise_limit;
  }
  Measured& info = result.measured;
  info.rounds = m.rounds;
  info.attempts = m.attempts;
  info.foreign_cores = m.load.foreign_cores;
  info.steal = m.load.steal;
  info.baseline_spread = has_baseline && !m.items.empty() ? m.items[0].spread : 0;
  info.ratio_spread = m.ratio_spread;
  info.contention = m.contention;
  info.remeasured = m.remeasured;
  info.noisy = m.noisy;
  return m;
}

void finish(TuneResult& result) {
  std::stable_sort(result.rows.begin(), result.rows.end(), [](const TuneRow& a, const TuneRow& b) {
    if (a.ok != b.ok) return a.ok;
    return a.ok ? a.measured_ms < b.measured_ms : a.cost_rank < b.cost_rank;
  });
  std::vector<double> predicted, measured;
  for (const auto& row : result.rows)
    if (row.ok) {
      predicted.push_back(row.predicted_ms);
      measured.push_back(row.measured_ms);
    }
  result.rank_correlation = spearman(predicted, measured);
  result.best = !result.rows.empty() && result.rows[0].ok ? 0 : -1;
  fill_ratios(result);
}

namespace {

// Where the reference overflows: the number of values of each output that are inf or NaN, as
// "output 'out' has 1664 of 2048 values inf or NaN"; empty when all are finite.
std::string non_finite(const Program& program, const std::vector<Tensor>& reference) {
  for (size_t o = 0; o < reference.size(); ++o) {
    size_t bad = 0;
    for (float v : reference[o].data) bad += !std::isfinite(v);
    if (bad > 0)
      return "output '" + program.value(program.outputs[o]).name + "' has " + std::to_string(bad) + " of " +
             std::to_string(reference[o].data.size()) + " values inf or NaN";
  }
  return "";
}

std::string range_text(double range) {
  std::ostringstream s;
  s << "[-" << range << ", " << range << "]";
  return s.str();
}

}  // namespace

// A reference with infinities or NaNs from finite inputs in [-1, 1] means some intermediate left
// its dtype's range (exp of an f16 logit above 11 is past 65504). No kernel can match it, so the
// checks narrow the inputs by 4x at a time (down to [-1/64, 1/64]: scaled by powers of two, they
// stay exact at the dtype) and say why; a reference that overflows even there is an error that
// says what to change.
std::vector<Tensor> finite_reference(const Program& program, const DimBindings& dims, uint64_t seed, const CancelToken* cancel,
                                     std::vector<Tensor>& inputs, std::map<std::string, Tensor>& named, TuneResult& result) {
  bool narrow = false;
  for (const Value& v : program.values) narrow = narrow || v.type.dtype == DType::F16;
  const std::string why = narrow ? "some intermediate leaves f16's range (±65504): store the tensors at bf16 or f32, or keep "
                                   "intermediates small (subtract the max before exp, as softmax(x) does)"
                                 : "some intermediate overflows: keep intermediates small (subtract the max before exp, as softmax(x) does)";
  std::string first;
  for (double range = 1; range >= 1.0 / 64; range /= 4) {
    inputs = random_inputs(program, dims, seed, &named);
    if (range < 1) {
      for (Tensor& t : inputs)
        for (float& x : t.data) x *= float(range);
      for (auto& [name, t] : named)
        for (float& x : t.data) x *= float(range);
    }
    std::vector<Tensor> reference = interpret(program, dims, named, cancel);
    const std::string bad = non_finite(program, reference);
    if (bad.empty()) {
      result.input_range = range;
      if (range < 1) result.input_note = "checked on random inputs in " + range_text(range) + ": on [-1, 1] the reference's " + first + ", so " + why;
      return reference;
    }
    if (first.empty()) first = bad;
  }
  throw Error(Error::Kind::InvalidArgument, "the reference result is not finite: " + first + " on random inputs in [-1, 1] (and in " +
                                                range_text(1.0 / 64) + "), so " + why);
}

}  // namespace steps

using namespace steps;

// Spearman's rank correlation of two equally long lists: Pearson's correlation of their ranks,
// ties sharing their average rank. 0 when it is undefined (fewer than 3 values, or one list
// constant: a cost model that cannot tell the instantiations apart has no correlation to show).
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  size_t n = a.size();
  if (n < 3) return 0;
  auto ranks = [n](const std::vector<double>& v) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(n);
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j + 1 < n && v[order[j + 1]] == v[order[i]]) ++j;
      for (size_t k = i; k <= j; ++k) r[order[k]] = (double(i) + double(j)) / 2;
      i = j + 1;
    }
    return r;
  };
  std::vector<double> ra = ranks(a), rb = ranks(b);
  double mean = (double(n) - 1) / 2, cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < n; ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 0;
}

void fill_ratios(TuneResult& result) {
  const TuneRow* best = result.best >= 0 && size_t(result.best) < result.rows.size() && result.rows[size_t(result.best)].ok
                            ? &result.rows[size_t(result.best)]
                            : nullptr;
  result.best_ms = best ? best->measured_ms : 0;
  if (best && result.roofline_ms > result.best_ms) {
    if (result.roofline_drawn_ms <= 0) result.roofline_drawn_ms = result.roofline_ms;
    result.roofline_ms = result.best_ms;
  }
  for (TuneRow& row : result.rows) {
    const bool timed = row.ok && row.measured_ms > 0;
    row.speedup = timed && result.baseline_ms > 0 ? result.baseline_ms / row.measured_ms : 0;
    row.roofline_fraction = timed ? std::min(1.0, result.roofline_ms / row.measured_ms) : 0;
  }
  result.speedup = best ? best->speedup : 0;
  result.roofline_fraction = best ? best->roofline_fraction : 0;
}

double regret(const TuneResult& result) {
  const TuneRow* first = nullptr;
  for (const TuneRow& row : result.rows)
    if (row.ok && (!first || row.cost_rank < first->cost_rank)) first = &row;
  return first && result.best_ms > 0 ? first->measured_ms / result.best_ms : 0;
}

std::string sizes_text(const std::map<std::string, int64_t>& sizes) { return sizes.empty() ? "-" : key_values(sizes); }

namespace {

using PhaseReport = std::function<void(const std::string& phase, int done, int total)>;

// What a result is about: the program, the target and its toolchain, the prism that tunes, the
// request's bindings, K and threads.
TuneResult result_header(const backend::Backend& backend, const Program& lowered, const TuneRequest& request,
                         const backend::TargetDescription& target) {
  TuneResult result;
  result.program = lowered.name;
  result.target = backend.target();
  result.target_model = target.model;
  result.toolchain = target.toolchain;
  result.lowered = print_program(lowered);
  result.prism_version = PRISM_VERSION;
  result.bindings = request.bindings;
  result.top = request.top;
  result.threads = backend.threads(request.threads, target);
  return result;
}

// The roofline of the stored program at `dims` on the target: its time, bound and the bandwidth
// and peak behind it ("cache": memory-bound, but the working set fits in the last-level cache
// and is read from there).
void set_roofline(TuneResult& result, const Program& program, const DimBindings& dims, const backend::TargetDescription& target) {
  const Roofline roof = stored_roofline(program, dims, target);
  result.roofline_ms = roof.seconds * 1e3;
  result.roofline_bound = roof.bound == "memory" && roof.level == "cache" ? "cache" : roof.bound;
  result.bandwidth_gbs = roof.bandwidth_gbs;
  result.peak_gflops = roof.peak_gflops;
}

// The instantiations to time: an import's claimed rows where any is valid here (measured before
// it is served), else the cost model's top K, each at the backend's schedules.
std::vector<Option> options_to_time(const backend::Backend& backend, const std::vector<Candidate>& families, const DimBindings& dims,
                                    const TuneRequest& request, const backend::TargetDescription& target, const CancelToken* cancel,
                                    TuneResult& result, const PhaseReport& report) {
  report("ranking", 0, int(families.size()));
  std::vector<sgraph::SGraph> graphs;
  for (const auto& family : families) graphs.push_back(backend.stored(*family.graph));
  std::vector<Option> ranked = rank_options(graphs, dims, target, cancel);
  result.stats.instantiations = ranked.size();
  const std::vector<backend::Schedule> schedules = backend.schedules(target);
  std::vector<Option> timed = claimed_options(ranked, families, request.claimed, schedules);
  if (!timed.empty()) return timed;
  std::vector<backend::Schedule> same_target;  // the default's and those that keep its target
  std::vector<Option> own_target;             // the others', each ranked on its own target
  for (const backend::Schedule& schedule : schedules)
    if (std::optional<backend::TargetDescription> scheduled = backend.scheduled_target(schedule, target)) {
      std::vector<Option> own = scheduled_options(graphs, dims, *scheduled, schedule, cancel);
      own_target.insert(own_target.end(), std::make_move_iterator(own.begin()), std::make_move_iterator(own.end()));
    } else {
      same_target.push_back(schedule);
    }
  timed = timed_options(ranked, choose(ranked, request.top), same_target);
  timed.insert(timed.end(), std::make_move_iterator(own_target.begin()), std::make_move_iterator(own_target.end()));
  return timed;
}

// The builds: the eager baseline first, then each option's (a fault where a test plants one), all
// compiled at once; the compile's time and counts into the result.
std::vector<backend::Build> compiled_builds(const backend::Backend& backend, const Program& program, const DimBindings& dims,
                                            const std::vector<Option>& timed, const TuneEnvironment& env, const CancelToken* cancel,
                                            TuneResult& result, const PhaseReport& report) {
  const backend::TargetDescription& target = env.target;
  std::vector<backend::Build> builds{backend.eager(program, dims)};
  result.baseline_note = builds.front().note;
  const std::map<size_t, std::string> faults = planted_faults();
  for (size_t i = 0; i < timed.size(); ++i) {
    if (cancel) cancel->check();
    auto fault = faults.find(i);
    builds.push_back(fault != faults.end() ? backend.fault(fault->second) : backend.generate(timed[i].instance(), target, timed[i].schedule));
  }
  report("compiling", 0, int(builds.size()));
  auto compile_start = Clock::now();
  backend.compile(builds, target, {env.kernel_cache_dir, std::max(1, target.cores)});
  result.stats.compile_s = seconds_since(compile_start);
  for (const backend::Build& b : builds)
    if (b.error.empty()) ++(b.cached ? result.stats.cached : result.stats.compiled);
  if (cancel) cancel->check();
  return builds;
}

}  // namespace

TuneResult tune_families(const backend::Backend& backend, const Program& lowered, const std::vector<Candidate>& families,
                         const TuneRequest& request, const TuneEnvironment& env, const CancelToken* cancel,
                         const std::function<void(const TuneProgress&)>& progress) {
  const auto start = Clock::now();
  auto report = [&](const std::string& phase, int done, int total) {
    if (progress) progress({phase, done, total, seconds_since(start), ""});
  };
  const DimBindings dims(request.bindings.begin(), request.bindings.end());
  check_bindings(lowered, dims);
  const backend::TargetDescription& target = env.target;
  TuneResult result = result_header(backend, lowered, request, target);

  // The reference: the program at the backend's storage dtypes, on seeded random inputs. The
  // roofline's peak is that of the instructions its matmuls run on (roofline_peak_gflops).
  report("reference", 0, 1);
  const Program program = backend.stored(lowered);
  std::map<std::string, Tensor> named;
  std::vector<Tensor> inputs;
  std::vector<Tensor> reference = finite_reference(program, dims, request.seed, cancel, inputs, named, result);
  const InputSet seeded{"the seeded inputs", std::move(named), std::move(reference), "", false};
  // The user's data (--check-with), checked against the program's inputs before anything compiles.
  std::optional<InputSet> user;
  if (!request.check_with.empty()) user = user_input_set(program, dims, seeded.named, request.check_with, cancel);
  std::vector<DType> out_dtypes;
  for (int id : program.outputs) out_dtypes.push_back(program.value(id).type.dtype);
  set_roofline(result, program, dims, target);

  const std::vector<Option> timed = options_to_time(backend, families, dims, request, target, cancel, result, report);
  const std::vector<backend::Build> builds = compiled_builds(backend, program, dims, timed, env, cancel, result, report);

  // Checking: every build once in one worker, baseline first, all on the same inputs; each output
  // checked against the reference at its dtype's tolerance. Then timing: the baseline and the
  // builds that passed, in interleaved rounds (timing.h).
  auto run_start = Clock::now();
  backend::KernelRunner runner = env.runner_path.empty() ? backend::KernelRunner() : backend::KernelRunner(env.runner_path);
  runner.set_inputs(inputs);
  backend::RunSettings run;
  for (const auto& t : seeded.reference) run.output_shapes.push_back(t.shape);
  for (int id : program.inputs) run.input_dtypes.push_back(program.value(id).type.dtype);
  run.output_dtypes = out_dtypes;
  run.threads = result.threads;
  run.timeout_s = kernel_timeout_s(0);
  // Each output held to the tolerance of the coarsest dtype on its way (checked_dtypes.h), with
  // the 16-bit second chances an edge set's miss gets, but none for rounding f32 differently
  // (edge_check.h's SetReferenceCache).
  const std::vector<DType> checked = checked_dtypes(program);
  SetReferenceCache seeded_references(program, dims, seeded, cancel);
  auto check = [&](const std::vector<Tensor>& got) { return compare_on_set(backend, got, seeded, checked, seeded_references.references()); };
  auto check_build = [&](size_t i, TuneRow& row) {
    if (!builds[i].error.empty()) {
      row.error = builds[i].error;
      row.transient = builds[i].transient;
      return;
    }
    record_run(row, backend.run(runner, builds[i], run, cancel), check);
  };
  check_items(result, timed, families, check_build, report);
  // The edge suite and the user's data (edge_check.h): the inputs once per set, one run per
  // build; then the seeded inputs again for the timing.
  std::vector<MakeInputSet> sets = edge_suite(program, dims, seeded.named, request.seed);
  if (user) sets.push_back([&](const CancelToken*) { return *user; });
  const EdgeContext edges{backend, program, dims, checked, [&](const std::vector<Tensor>& in) { runner.set_inputs(in); },
                          [&](size_t i) { return backend.run(runner, builds[i], run, cancel); }};
  check_edge_sets(result, sets, edges, cancel, report);
  if (!result.edge_sets.empty()) runner.set_inputs(inputs);
  backend::RunSettings round = run;
  round.round = true;
  auto time_build = [&](size_t i) {
    backend::RunOutcome outcome = backend.run(runner, builds[i], round, cancel);
    return RoundTime{outcome.ok, outcome.median_ms, outcome.error, outcome.transient};
  };
  auto watch_load = [&runner, cores = std::max(1, target.cores)]() -> std::function<Load()> {
    const int pid = runner.worker_pid();
    const CpuSample before = sample_cpu(pid);
    return [&runner, pid, before, cores] {
      return load_between(before, sample_cpu(own_worker_after(pid, runner.worker_pid())), cores);
    };
  };
  time_rounds(result, env.timing, time_build, watch_load, report);
  result.stats.run_s = seconds_since(run_start);

  finish(result);
  result.measured.at = utc_now();
  result.measured.tuner_revision = kTunerRevision;
  result.measured.seed = request.seed;
  result.stats.total_s = seconds_since(start);
  report("done", int(timed.size()) + 1, int(timed.size()) + 1);
  return result;
}

sgraph::Instance choose_instance(const Program& lowered, const sgraph::SGraph& graph, int family_id,
                                 const std::map<std::string, int64_t>& bindings, const backend::TargetDescription& target,
                                 const std::map<std::string, int64_t>* sizes) {
  const DimBindings dims(bindings.begin(), bindings.end());
  check_bindings(lowered, dims);
  if (sizes) return sgraph::instantiate(graph, dims, DimBindings(sizes->begin(), sizes->end()), target.spill_budget());
  const std::vector<Option> ranked = rank_options({graph}, dims, target, nullptr);
  if (ranked.empty())
    throw Error(Error::Kind::InvalidArgument, "candidate " + std::to_string(family_id) + " has no valid instantiation at these dims");
  return ranked[0].instance();
}

std::map<std::string, int64_t> instance_sizes(const sgraph::Instance& instance) {
  DimBindings sizes = family_sizes(instance.graph, instance.bindings);
  return {sizes.begin(), sizes.end()};
}

KernelChoice kernel_for(const backend::Backend& backend, const Program& lowered, const Candidate& family,
                        const std::map<std::string, int64_t>& bindings, const backend::TargetDescription& target,
                        const std::map<std::string, int64_t>* sizes, const backend::Schedule& schedule, pipeline::Dump* dump) {
  KernelChoice choice;
  choice.schedule = backend.resolve_schedule(schedule, target);
  // A schedule that changes what a block holds ranks the family's instances on its own target.
  const backend::TargetDescription ranked_on = backend.scheduled_target(choice.schedule, target).value_or(target);
  sgraph::Instance instance = choose_instance(lowered, backend.stored(*family.graph), family.id, bindings, ranked_on, sizes);
  pipeline::dump_after(dump, pipeline::Pass::Instantiate,
                       [&] { return sgraph::print(instance.graph) + "# at " + sizes_text(instance.bindings) + "\n"; });
  pipeline::dump_after(dump, pipeline::Pass::Lower, [&] { return backend::print_kernel_ir(backend.kernel_ir(instance, target, choice.schedule)); });
  backend::Build build = backend.generate(instance, target, choice.schedule);
  if (!build.error.empty()) throw Error(Error::Kind::InvalidArgument, build.error);
  pipeline::dump_after(dump, pipeline::Pass::Print, [&] { return build.source; });
  choice.sizes = instance_sizes(instance);
  choice.build = std::move(build);
  choice.estimate = estimate_cost(instance, ranked_on);
  return choice;
}

}  // namespace prism::tune
