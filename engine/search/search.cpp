// Orchestration of the symbolic search: saturate the program's e-graph, enumerate fused
// computations on TBB workers (generator.h), cut each into families by the plans (plan.h), drop
// invalid, oversized and duplicate families, verify the rest (verify.h), and keep the proved ones.
#include "engine/search/search.h"

#include <tbb/concurrent_unordered_set.h>
#include <tbb/concurrent_vector.h>
#include <tbb/parallel_for_each.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>

#include "engine/cancel.h"
#include "engine/error.h"
#include "engine/interp/footprint.h"
#include "engine/ir/defer_row_scales.h"
#include "engine/ir/drop_casts.h"
#include "engine/ir/one_pass_variance.h"
#include "engine/ir/print.h"
#include "engine/ir/push_transposes.h"
#include "engine/ir/regroup_layouts.h"
#include "engine/ir/raise_ranks.h"
#include "engine/ir/symbolize_sizes.h"
#include "engine/pipeline.h"
#include "engine/search/fingerprint.h"
#include "engine/search/generator.h"
#include "engine/search/kernel_search.h"
#include "engine/search/library_search.h"
#include "engine/search/plan.h"
#include "engine/search/verify.h"
#include "engine/sgraph/canonical.h"
#include "engine/sgraph/instantiate.h"
#include "engine/sgraph/print.h"
#include "engine/sgraph/substitute_dims.h"
#include "engine/sgraph/validate.h"

namespace prism {

const char* search_stop_name(SearchStop stop) {
  switch (stop) {
    case SearchStop::Complete: return "complete";
    case SearchStop::Budget: return "budget";
  }
  return "complete";
}

}  // namespace prism

namespace prism::search {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Counters {
  GenCounters gen;
  std::atomic<uint64_t> families{0}, pruned_structure{0}, pruned_dims{0}, pruned_hardware{0}, duplicates{0}, verified{0}, rejected{0},
      unproved{0}, verify_ns{0}, fingerprinted{0}, fingerprint_rejected{0}, fingerprint_ns{0};
  // The first concrete reason each stage removed a family (for "why nothing was found").
  std::mutex why_mutex;
  std::map<std::string, std::string> first_why;
  void why(const std::string& stage, const std::string& text) {
    std::lock_guard<std::mutex> lock(why_mutex);
    first_why.emplace(stage, text);
  }
  uint64_t pruned() const {
    return gen.pruned_expression + gen.pruned_dims + gen.pruned_structure + pruned_structure + pruned_dims + pruned_hardware;
  }
};

// The last stage that held a family, with its first reason; the limit to raise when one was hit.
std::string empty_reason(const SearchStats& st, const SearchLimits& limits, const std::map<std::string, std::string>& why,
                         const std::string& seed_why, bool several, bool cut) {
  auto first = [&](const char* stage) {
    auto it = why.find(stage);
    std::string text = it == why.end() ? "" : it->second;
    if (text.size() > 400) text = text.substr(0, 400) + " …";
    return text;
  };
  std::string r;
  if (st.unproved > 0) {
    r = std::to_string(st.unproved) + " families passed the numeric checks but the e-graph proved none; the first: " + first("unproved");
  } else if (st.rejected > 0) {
    r = "every family that reached verification differs from the program (" + std::to_string(st.rejected) + " rejected); the first " +
        first("rejected");
  } else if (st.pruned_hardware > 0 && why.count("hardware")) {
    r = "every family needs more fast memory per block than the target has at these dims: " + first("hardware");
  } else if (st.families > 0 || why.count("structure") || why.count("dims")) {
    r = "no plan cuts the computations found into valid kernels; the first reason: " +
        (why.count("structure") ? first("structure") : first("dims"));
  } else if (several) {
    r = std::string("a program with several outputs is searched as written") + (cut ? " and one piece per output (no piece's search found a family)" : "") +
        ", and as written it is no fused computation: " + seed_why;
  } else {
    r = "no computation of at most " + std::to_string(limits.max_block_ops) + " ops equals the program (raise --max-ops)";
    if (!seed_why.empty()) r += ", and the program as written is no fused computation: " + seed_why;
  }
  if (st.stop_reason == SearchStop::Budget)
    r += "; the search's budget of " + std::to_string(int(limits.budget_s)) + " s ran out before it finished (raise --budget)";
  return r;
}

}  // namespace

int64_t search_memory_bytes(const Program& lowered) {
  // Workers hold families' tensors at the check dims beside the reference's, and the fingerprint
  // its field elements at its own (smaller) dims. kCopies is measured: a search of `X + Y` on two
  // literal 2^22-element vectors (48 MiB of tensors) peaked at 1.06 GB resident, 22 times.
  constexpr int64_t kCopies = 24;
  int64_t tensors = std::max(interpreter_bytes(lowered, check_dims(lowered)), interpreter_bytes(lowered, fingerprint_dims(lowered)));
  if (tensors > std::numeric_limits<int64_t>::max() / kCopies) return std::numeric_limits<int64_t>::max();
  return kCopies * tensors;
}

namespace {

// The program the search works on, equal to `given`: casts are the identity on the reals the
// proofs reason in (drop_casts.h); what a kernel reads transposed must be an input (a load's
// view), so transposes of computed values move down to the inputs first, a reshape beside a
// transpose moves across it where that leaves a chain kernel cuts read (regroup_layouts.h), and lower-rank computed
// values rise to their readers' rank through views of their inputs (raise_ranks.h).
Program search_form(const Program& given, const CancelToken& bounded) {
  const Program cast_free = drop_casts(given);
  bounded.check();
  const Program transposed = regroup_layouts(push_transposes(cast_free));
  bounded.check();
  Program program = raise_ranks(transposed);
  bounded.check();
  return program;
}

// Why no fused kernel can compute `program`: a returned cast drop_casts had to keep; else none.
std::optional<std::string> kept_cast_reason(const Program& program) {
  for (const Value& v : program.values)
    if (v.op == Op::Cast)
      return "'" + v.name + "' returns " + dtype_name(v.type.dtype) + "(" + program.value(v.operands[0]).name +
             ") of a value the program also has at " + dtype_name(program.value(v.operands[0]).type.dtype) +
             ", and a fused kernel stores each value at one dtype: return one of them, or cast where the value is computed";
  return std::nullopt;
}

// The search's counters as its statistics.
void fill_stats(SearchStats& st, const Counters& c) {
  st.generated = c.gen.generated + c.families;
  st.families = c.families;
  st.pruned_expression = c.gen.pruned_expression;
  st.pruned_dims = c.gen.pruned_dims + c.pruned_dims;
  st.pruned_structure = c.gen.pruned_structure + c.pruned_structure;
  st.pruned_hardware = c.pruned_hardware;
  st.duplicates = c.duplicates;
  st.verified = c.verified;
  st.rejected = c.rejected;
  st.unproved = c.unproved;
  st.verify_s = double(c.verify_ns) * 1e-9;
  st.fingerprinted = c.fingerprinted;
  st.fingerprint_rejected = c.fingerprint_rejected;
  st.fingerprint_s = double(c.fingerprint_ns) * 1e-9;
}

// The verified families in a stable order, by kernel count and then canonical text, numbered
// from 1.
std::vector<Candidate> in_stable_order(tbb::concurrent_vector<Candidate>& found) {
  std::vector<Candidate> candidates;
  std::vector<std::pair<std::string, size_t>> order;
  for (size_t i = 0; i < found.size(); ++i) order.emplace_back(found[i].text(), i);
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    const int ka = found[a.second].kernels, kb = found[b.second].kernels;
    return ka != kb ? ka < kb : a.first < b.first;
  });
  for (const auto& [text, i] : order) {
    candidates.push_back(std::move(found[i]));
    candidates.back().id = int(candidates.size());
  }
  return candidates;
}

// search_program's work. `bounded` fires on the client's cancel (`cancel`) and at the budget's
// deadline: everything before the enumeration polls it, so a deadline there throws (and
// search_program answers "budget"); from the enumeration on, a deadline stops the search with
// what it found.
// One search of one program past its early answers: what its workers share, and its steps.
class SearchRun {
 public:
  SearchRun(const Program& program, const SearchLimits& limits, const CancelToken* cancel, const CancelToken& bounded, Clock::time_point t0,
            const std::function<void(const SearchProgress&)>& progress, SearchResult& result, pipeline::Dump* dump)
      : program_(program),
        limits_(limits),
        cancel_(cancel),
        bounded_(bounded),
        t0_(t0),
        progress_(progress),
        result_(result),
        dump_(dump),
        several_(program.outputs.size() > 1),
        hw_{limits.fast_memory_bytes},
        cuts_(kernel_cuts(program)),
        cut_required_(!cuts_.empty() && cuts_.front().required),
        by_blocks_(cut_required_ && cuts_.front().blocks),
        leaves_(dag_leaves(program)),
        expr_(saturated(program, limits, bounded)),
        saturate_s_(seconds_since(t0)),
        check_(program, &bounded),
        fingerprint_(program, fingerprint_dims(program), &bounded),
        prover_(program),
        gen_(program, leaves_, expr_.get(), limits.max_block_ops, c_.gen) {}

  // The enumeration, then the families made of parts; the statistics and candidates into the result.
  void run() {
    SearchStats& st = result_.stats;
    st.saturate_s = saturate_s_;
    pipeline::dump_after(dump_, pipeline::Pass::Saturate, [&] {
      return expr_ ? std::to_string(expr_->nodes()) + " e-nodes over the program's expressions, saturated in " + std::to_string(saturate_s_) + " s"
                   : std::string("none: the search does not prune by expressions here (no pruning, several outputs, or a search by blocks)");
    });
    std::string seed_why;  // why the program as written is no DAG, if it is not
    const std::optional<Program> one_pass = one_pass_variance(program_);
    bounded_.check();
    const auto tg0 = Clock::now();
    enumerate(one_pass, seed_why);
    if (cancelled_ || (cancel_ && cancel_->cancelled())) throw Error(Error::Kind::Cancelled, "search cancelled");
    compose();
    st.generate_s = seconds_since(tg0);
    fill_stats(st, c_);
    st.stop_reason = over_budget_ ? SearchStop::Budget : SearchStop::Complete;
    if (found_.empty()) st.empty_reason = empty_reason(st, limits_, c_.first_why, seed_why, several_, !cuts_.empty());
    result_.candidates = in_stable_order(found_);
    st.total_s = seconds_since(t0_);
    report(true);
  }

 private:
  // The program's expression e-graph, for pruning (none for several outputs or a search by blocks).
  std::unique_ptr<ProgramExpressions> saturated(const Program& program, const SearchLimits& limits, const CancelToken& bounded) const {
    bounded.check();
    if (!limits.prune || several_ || by_blocks_) return nullptr;
    return std::make_unique<ProgramExpressions>(program, leaves_, SaturationLimits{}, &bounded);
  }

  void report(bool force) {
    if (!progress_) return;
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0_).count();
    int64_t last = last_report_.load();
    if (!force && (now - last < 100 || !last_report_.compare_exchange_strong(last, now))) return;
    std::lock_guard<std::mutex> lock(report_mutex_);
    progress_(SearchProgress{c_.gen.generated + c_.families, c_.pruned(), c_.verified, seconds_since(t0_)});
  }

  bool stop() {
    if (cancelled_ || over_budget_) return true;
    if (cancel_ && cancel_->cancelled()) return cancelled_ = true;
    if (bounded_.cancelled()) return over_budget_ = true;  // the budget's deadline (the cancel is above)
    report(false);
    return false;
  }

  // Runs `f`; the deadline firing inside it stops the search as over its budget, keeping what was
  // found; a client's cancel goes on up.
  void within_budget(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      if (e.kind() != Error::Kind::Cancelled || (cancel_ && cancel_->cancelled())) throw;
      over_budget_ = true;
    }
  }

  // Whether `graph` needs more fast memory than the budget at the search's bindings (none: it
  // cannot tell), counted as a hardware prune.
  bool over_memory(const sgraph::SGraph& graph) {
    if (limits_.bindings.empty()) return false;
    const std::vector<std::string> bound = sgraph::memory_lower_bound(graph, limits_.bindings, hw_);
    if (bound.empty()) return false;
    c_.pruned_hardware++;
    c_.why("hardware", bound.front());
    return true;
  }

  // A family that passed the structural checks: kept when new, equal to the program on the
  // fingerprint and the numeric check, and proved by `prove`.
  void keep(const sgraph::SGraph& graph, const std::string& summary, const std::function<Proof()>& prove) {
    const uint64_t hash = sgraph::canonical_hash(graph);
    if (!seen_.insert(hash).second) {
      c_.duplicates++;
      return;
    }
    const auto tv = Clock::now();
    bool ok = false;
    Proof proof;
    // The fingerprint first: a mismatch rejects; a match or no fingerprint goes on to the rest.
    std::string fp_why;
    const FingerprintCheck::Verdict fv = fingerprint_.check(graph, fp_why, &bounded_);
    c_.fingerprint_ns += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - tv).count());
    if (fv != FingerprintCheck::Verdict::Cannot) c_.fingerprinted++;
    if (fv == FingerprintCheck::Verdict::Differ) {
      c_.fingerprint_rejected++;
      c_.rejected++;
      c_.why("rejected", "its finite-field fingerprint differs from the program's: " + fp_why);
    } else if (auto mismatch = check_.mismatch(graph, &bounded_)) {
      c_.rejected++;
      c_.why("rejected", "at the numeric check's sizes it " + *mismatch);
    } else {
      proof = prove();
      if (proof.proved) ok = true;
      else c_.unproved++, c_.why("unproved", proof.text);
    }
    c_.verify_ns += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - tv).count());
    if (!ok) return;
    c_.verified++;
    Candidate cand;
    auto canon = std::make_shared<const sgraph::SGraph>(sgraph::canonicalize(graph));
    cand.kernels = sgraph::kernels_run(*canon);
    cand.parameters = canon->parameters();
    cand.graph = std::move(canon);
    cand.summary = summary;
    cand.proof = proof.text;
    cand.hash = hash;
    pipeline::dump_after(dump_, pipeline::Pass::Verify, [&] { return sgraph::print(*cand.graph) + "# " + cand.summary + "\n"; });
    found_.push_back(std::move(cand));
  }

  // A computation the enumeration (or a seed) produced: its plans' families, on all workers.
  void emit(const Dag& dag) {
    pipeline::dump_after(dump_, pipeline::Pass::Enumerate, [&] { return dag.key(); });
    within_budget([&] {
      // Without expression pruning nothing vouches for the computation yet: check it whole first
      // (no plan can fix a computation that differs from the program).
      if (!expr_ && !check_.dag_matches(dag, &bounded_)) {
        c_.rejected++;
        return;
      }
      // Proved over the reals is not enough: in floats the computation must keep what the program
      // keeps (verify.h, NumericCheck::unstable; docs/design.md, "Numerics").
      if (auto why = check_.unstable(dag, &bounded_)) {
        c_.rejected++;
        c_.why("rejected", "it is less stable in floating point than the program: " + *why);
        return;
      }
      const Indices ix = analyze_indices(dag);
      const std::vector<Plan> plans = enumerate_plans(ix);
      // The plans of one computation are independent: verify them on all workers.
      tbb::parallel_for_each(plans.begin(), plans.end(), [&](const Plan& plan) {
        if (!stop()) family_of_plan(dag, ix, plan);
      });
    });
  }

  // One plan's family: built, its structure, dims and memory checked, then kept if proved.
  void family_of_plan(const Dag& dag, const Indices& ix, const Plan& plan) {
    std::string why;
    std::optional<Family> fam = build_family(dag, ix, plan, program_, limits_, why);
    if (!fam) {
      c_.pruned_structure++;
      c_.why("structure", why);
      return;
    }
    c_.families++;
    const sgraph::Analysis an = sgraph::analyze(fam->graph);
    if (!an.ok()) {
      c_.pruned_structure++;
      c_.why("structure", an.errors.front());
      return;
    }
    // A dim equality left open (d/F1 == d/g1) holds only for some sizes: not a generic family.
    auto open = std::find_if(an.constraints.begin(), an.constraints.end(), [](const sgraph::Constraint& k) { return k.kind == sgraph::Constraint::Kind::Equal; });
    if (open != an.constraints.end()) {
      c_.pruned_dims++;
      c_.why("dims", "a dim equality holds only for some sizes: " + open->str());
      return;
    }
    if (expr_ && over_memory(fam->graph)) return;
    pipeline::dump_after(dump_, pipeline::Pass::Prune, [&] { return sgraph::print(fam->graph); });
    keep(fam->graph, fam->summary, [&] { return prover_.prove(dag, *fam, &bounded_); });
  }

  // The program as written first: its families do not depend on the enumeration's op limit.
  // Then rewritten forms, seeds too since they are often longer than that limit: with a
  // one-pass variance (both row sums in one loop; one_pass_variance.h, exact only in real
  // arithmetic: the check on mean-shifted rows keeps it only where the dtype cannot resolve a
  // mean large enough to make it cancel), and each with row scales moved past matmuls
  // (attention normalized after its matmul with V, the form online softmax accumulates). A
  // program of many blocks has none: its blocks' searches make its families. Then the
  // enumeration, on `limits.threads` workers.
  void enumerate(const std::optional<Program>& one_pass, std::string& seed_why) {
    const std::function<void(const Dag&)> emit = [this](const Dag& dag) { this->emit(dag); };
    const std::function<bool()> stop = [this] { return this->stop(); };
    tbb::task_arena arena(limits_.threads > 0 ? limits_.threads : tbb::task_arena::automatic);
    arena.execute([&] {
      tbb::task_group group;
      const std::function<void(std::function<void()>)> spawn = [&](std::function<void()> f) { group.run(std::move(f)); };
      try {
        std::vector<Program> forms;
        if (!by_blocks_) forms.push_back(program_);
        if (one_pass && !forms.empty()) forms.push_back(*one_pass);
        for (size_t f = 0; f < forms.size(); ++f) {
          if (const std::optional<Dag> seed = program_dag(forms[f], leaves_, f == 0 ? &seed_why : nullptr)) {
            c_.gen.generated++;
            emit(*seed);
          }
          if (const std::optional<Program> deferred = defer_row_scales(forms[f]))
            if (const std::optional<Dag> seed = program_dag(*deferred, leaves_)) {
              c_.gen.generated++;
              emit(*seed);
            }
        }
        if (!several_ && !cut_required_ && limits_.max_block_ops > 0) gen_.run(emit, stop, spawn, 2);
      } catch (...) {
        cancelled_ = true;  // unwind the other workers, then rethrow
        group.wait();
        throw;
      }
      group.wait();
    });
  }

  // Families made of parts (a vendor matmul's cut, a kernel cut's pieces): the parts' own searches
  // proved them; the whole is checked here.
  void compose() {
    if (!several_ && !over_budget_ && !cut_required_) within_budget([&] {
      const double left = limits_.budget_s - seconds_since(t0_);
      for (const ComposedFamily& f : library_families(program_, limits_, cuts_.empty() ? left : left / 2, &bounded_)) keep_composed(f, true);
    });
    if (!cuts_.empty() && !over_budget_) within_budget([&] {
      for (const ComposedFamily& f : kernel_cut_families(program_, cuts_, limits_, limits_.budget_s - seconds_since(t0_), &bounded_))
        keep_composed(f, false);
    });
  }

  // A family's vendor matmuls count as one kernel against --max-kernels (--library-kernels bounds
  // how many there are): SwiGLU's two projections beside one fused kernel is two. A kernel cut's
  // pieces are each bounded by it (docs/search.md, "Kernel cuts").
  void keep_composed(const ComposedFamily& f, bool count_kernels) {
    c_.families++;
    const int fused = int(std::count_if(f.graph.kernels.begin(), f.graph.kernels.end(), [](const sgraph::Kernel& k) { return k.custom; }));
    if (count_kernels && fused + 1 > limits_.max_kernels) {
      c_.pruned_structure++;
      c_.why("structure", "a vendor matmul beside fused kernels takes " + std::to_string(fused + 1) + " kernels, more than --max-kernels " +
                              std::to_string(limits_.max_kernels));
      return;
    }
    const sgraph::Analysis an = sgraph::analyze(f.graph);
    if (!an.ok()) {
      c_.pruned_structure++;
      c_.why("structure", an.errors.front());
      return;
    }
    if (limits_.prune && over_memory(f.graph)) return;  // the parts were searched without pruning
    pipeline::dump_after(dump_, pipeline::Pass::Prune, [&] { return sgraph::print(f.graph); });
    keep(f.graph, f.summary, [&] { return Proof{true, f.proof}; });
  }

  const Program& program_;
  const SearchLimits& limits_;
  const CancelToken* cancel_;
  const CancelToken& bounded_;
  const Clock::time_point t0_;
  const std::function<void(const SearchProgress&)>& progress_;
  SearchResult& result_;
  pipeline::Dump* const dump_;
  Counters c_;
  // Several outputs: the program as written is the only computation (the enumeration and its
  // pruning follow one root), parallelized by every plan.
  const bool several_;
  const sgraph::TileBudget hw_;
  // A program cut where its layout changes has no family whole, and one of many blocks is searched
  // block by block (kernel_cut.h): past its seeds, its pieces are the search; they cut their own
  // matmuls. One cut by blocks has no seeds of its own, so nothing for its saturated e-graph to prune.
  const std::vector<KernelCut> cuts_;
  const bool cut_required_, by_blocks_;
  const std::vector<DagValue> leaves_;
  const std::unique_ptr<ProgramExpressions> expr_;
  const double saturate_s_;
  NumericCheck check_;
  FingerprintCheck fingerprint_;
  Prover prover_;
  Generator gen_;
  tbb::concurrent_unordered_set<uint64_t> seen_;
  tbb::concurrent_vector<Candidate> found_;
  std::atomic<bool> cancelled_{false}, over_budget_{false};
  std::atomic<int64_t> last_report_{0};
  std::mutex report_mutex_;
};

SearchResult search_within(const Program& given, const SearchLimits& limits, const CancelToken* cancel, const CancelToken& bounded,
                           Clock::time_point t0, const std::function<void(const SearchProgress&)>& progress, pipeline::Dump* dump) {
  const Program program = search_form(given, bounded);  // every check below is against it
  pipeline::dump_after(dump, pipeline::Pass::SearchForm, [&] { return print_program(program); });
  if (program.outputs.empty()) throw Error(Error::Kind::InvalidArgument, "the search needs a program with an output");
  if (limits.fast_memory_bytes <= 0)
    throw Error(Error::Kind::InvalidArgument, "the search's fast-memory budget must be positive, not " + std::to_string(limits.fast_memory_bytes));
  SearchResult result;
  result.program = program.name;
  result.limits = limits;
  if (std::optional<std::string> why = kept_cast_reason(program)) {
    result.stats.stop_reason = SearchStop::Complete;
    result.stats.empty_reason = *why;
    return result;
  }
  SearchRun(program, limits, cancel, bounded, t0, progress, result, dump).run();
  return result;
}

}  // namespace

namespace {

// `r` (a search of `fixed.program`) for the program with fixed sizes: each family's dims for them
// written as their numbers (docs/search.md, "Fixed sizes").
SearchResult with_fixed_sizes(SearchResult r, const SymbolizedSizes& fixed, const SearchLimits& limits) {
  r.limits = limits;
  std::map<std::string, Dim> values;
  for (const auto& [dim, size] : fixed.sizes) values.emplace(dim, Dim(size));
  r.stats.empty_reason = with_sizes(r.stats.empty_reason, fixed.sizes);
  for (Candidate& c : r.candidates) {
    auto graph = std::make_shared<const sgraph::SGraph>(sgraph::canonicalize(sgraph::substitute_dims(*c.graph, values)));
    c.hash = sgraph::canonical_hash(*graph);
    c.parameters = graph->parameters();
    c.graph = std::move(graph);
    c.summary = with_sizes(c.summary, fixed.sizes);
    c.proof = with_sizes(c.proof, fixed.sizes);
  }
  return r;
}

// The search of a program whose fixed sizes are dims already (or that has none).
SearchResult search_named(const Program& given, const SearchLimits& limits, const CancelToken* cancel,
                          const std::function<void(const SearchProgress&)>& progress, pipeline::Dump* dump) {
  const auto t0 = Clock::now();
  const bool timed = std::isfinite(limits.budget_s) && limits.budget_s < 1e9;  // else no deadline
  const CancelToken bounded(cancel, timed ? t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, limits.budget_s)))
                                          : Clock::time_point::max());
  try {
    return search_within(given, limits, cancel, bounded, t0, progress, dump);
  } catch (const Error& e) {
    if (e.kind() != Error::Kind::Cancelled || (cancel && cancel->cancelled())) throw;
  }
  // The deadline passed before the enumeration began: a large program's checks alone took it.
  SearchResult result;
  result.program = given.name;
  result.limits = limits;
  result.stats.stop_reason = SearchStop::Budget;
  result.stats.empty_reason = "the search's budget of " + std::to_string(int(limits.budget_s)) + " s ran out while it prepared the checks of '" +
                              given.name + "' (" + std::to_string(given.values.size()) + " values), before any computation was tried (raise --budget)";
  result.stats.total_s = seconds_since(t0);
  return result;
}

}  // namespace

SearchResult search_program(const Program& given, const SearchLimits& limits, const CancelToken* cancel,
                            const std::function<void(const SearchProgress&)>& progress, pipeline::Dump* dump) {
  const SymbolizedSizes fixed = symbolize_sizes(given);
  pipeline::dump_after(dump, pipeline::Pass::NameSizes, [&] { return print_program(fixed.sizes.empty() ? given : fixed.program); });
  SearchResult r;
  if (fixed.sizes.empty()) {
    r = search_named(given, limits, cancel, progress, dump);
  } else {
    SearchLimits symbolic = limits;
    if (!limits.bindings.empty())  // shape-generic stays shape-generic
      for (const auto& [dim, size] : fixed.sizes) symbolic.bindings[dim] = size;
    r = with_fixed_sizes(search_named(fixed.program, symbolic, cancel, progress, dump), fixed, limits);
  }
  for (const Candidate& c : r.candidates) pipeline::dump_after(dump, pipeline::Pass::FixSizes, [&] { return c.text(); });
  return r;
}

}  // namespace prism::search

namespace prism {

std::string Candidate::text() const { return graph ? sgraph::print(*graph) : std::string(); }

}  // namespace prism
