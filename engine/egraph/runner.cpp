#include "engine/egraph/runner.h"

#include <stdexcept>

namespace prism::eg {

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::Saturated: return "saturated";
    case StopReason::NodeLimit: return "node limit";
    case StopReason::IterLimit: return "iteration limit";
    case StopReason::TimeLimit: return "time limit";
    case StopReason::Cancelled: return "cancelled";
    case StopReason::GoalReached: return "goal reached";
    case StopReason::Counterexample: return "counterexample";
  }
  return "?";
}

Runner::Runner(const std::vector<Rewrite>* rules) : rules_(rules), schedule_(rules->size()) {
  for (const Rewrite& r : *rules) stats_.push_back({r.name, 0, 0, 0});
}

RunReport Runner::run(EGraph& g, const RunLimits& limits, const CancelToken* cancel, const std::function<bool()>& goal) {
  return run(g, limits, cancel, goal, std::vector<bool>(rules_->size(), true));
}

RunReport Runner::run(EGraph& g, const RunLimits& limits, const CancelToken* cancel, const std::function<bool()>& goal, const std::vector<bool>& active) {
  if (active.size() != rules_->size()) throw std::logic_error("runner: one active flag per rule");
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  RunReport report;
  auto finish = [&](StopReason why) {
    g.rebuild();
    report.stop = why;
    report.seconds = elapsed();
    report.nodes = g.num_nodes();
    report.classes = g.num_classes();
    return report;
  };
  g.rebuild();
  if (goal && goal()) return finish(StopReason::GoalReached);
  std::vector<Subst> matches;
  std::vector<Id> results;
  for (;;) {
    if (report.iterations >= limits.iter_limit) return finish(StopReason::IterLimit);
    ++report.iterations;
    ++iteration_;
    const size_t nodes_before = g.num_nodes();
    const uint64_t unions_before = g.unions();
    bool held_back = false;
    // egg's order: search every rule on the same (clean) e-graph, then apply; here per rule,
    // which keeps the cancellation and limit checks close to the work.
    for (size_t r = 0; r < rules_->size(); ++r) {
      if (!active[r]) continue;
      const Rewrite& rule = (*rules_)[r];
      Schedule& sch = schedule_[r];
      if (sch.banned_until > iteration_) {
        held_back = true;
        continue;
      }
      const auto t0 = Clock::now();
      const size_t threshold = match_limit << sch.times_banned;
      matches.clear();
      g.rebuild();
      if (goal && goal()) return finish(StopReason::GoalReached);
      rule.lhs.search(g, matches, threshold + 1);
      stats_[r].matches += matches.size();
      if (matches.size() > threshold) {
        sch.banned_until = iteration_ + (ban_length << sch.times_banned);
        ++sch.times_banned;
        held_back = true;
        stats_[r].time_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        continue;
      }
      size_t done = 0;
      for (const Subst& s : matches) {
        if (cancel && (++done & 255) == 0 && cancel->cancelled()) return finish(StopReason::Cancelled);
        if (rule.guard && !rule.guard(g, s)) continue;
        results.clear();
        try {  // a rule's own code, or a merge it asks for, that breaks an invariant is named
          rule.apply(g, s, results);
          if (results.empty()) continue;
          // The left-hand side spelled exactly as matched (no new e-node: it is congruent to the
          // match), so an explanation shows this rule's step on the very terms it rewrote.
          const size_t ids_before = g.num_ids();
          const Id lhs = rule.lhs.instantiate(g, s);
          for (Id id : results) {
            const bool joined = g.merge(lhs, id, {Justification::Rule, uint32_t(r)});
            if (joined || g.num_ids() != ids_before) ++stats_[r].applications;
            if (on_apply) on_apply(r, lhs, id);
          }
        } catch (const std::logic_error& e) {
          throw std::logic_error("rule " + rule.name + ": " + e.what());
        }
      }
      stats_[r].time_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (cancel && cancel->cancelled()) return finish(StopReason::Cancelled);
      if (g.num_nodes() > limits.node_limit) return finish(StopReason::NodeLimit);
      if (elapsed() > limits.time_limit_s) return finish(StopReason::TimeLimit);
    }
    g.rebuild();
    if (goal && goal()) return finish(StopReason::GoalReached);
    if (g.num_nodes() > limits.node_limit) return finish(StopReason::NodeLimit);
    if (g.num_nodes() == nodes_before && g.unions() == unions_before) {
      if (!held_back) return finish(StopReason::Saturated);
      for (Schedule& sch : schedule_) sch.banned_until = 0;  // nothing else to do: release the bans
    }
  }
}

}  // namespace prism::eg
