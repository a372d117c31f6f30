// Equality saturation: search every rule, apply the matches, rebuild, repeat — until nothing
// changes (saturated) or a limit stops it. The stop reason says which; "saturated" is reported
// only when an iteration changed nothing and no rule was held back by the scheduler.
//
// Backoff scheduler (egg's): a rule whose matches exceed its threshold in one iteration is banned
// for some iterations and its threshold and ban both double each time, so explosive rules
// (commutativity, associativity) cannot starve the rest. When nothing else changes, banned rules
// are released early rather than declaring saturation.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/cancel.h"
#include "engine/egraph/rewrite.h"

namespace prism::eg {

// Counterexample is never a runner's: equivalence reports it when the numeric check refuted a
// claim before any saturation ran (so no refutation ever reads "saturated").
enum class StopReason { Saturated, NodeLimit, IterLimit, TimeLimit, Cancelled, GoalReached, Counterexample };
// "saturated", "node limit", "iteration limit", "time limit", "cancelled", "goal reached",
// "counterexample"
const char* stop_reason_name(StopReason reason);

struct RunLimits {
  size_t node_limit = 200000;
  size_t iter_limit = 40;
  double time_limit_s = 5.0;
};

struct RuleStats {
  std::string name;
  uint64_t matches = 0, applications = 0;
  double time_ms = 0;
};

struct RunReport {
  StopReason stop = StopReason::Saturated;
  size_t iterations = 0;
  double seconds = 0;
  size_t nodes = 0, classes = 0;
};

class Runner {
 public:
  explicit Runner(const std::vector<Rewrite>* rules);

  // Runs until saturated, a limit, cancellation, or `goal` holds. `goal` is checked on the
  // rebuilt e-graph before each rule's search, so a proof stops at the rule that completes it.
  RunReport run(EGraph& g, const RunLimits& limits, const CancelToken* cancel = nullptr, const std::function<bool()>& goal = {});
  // The same with only the rules `active` marks (one flag per rule); "saturated" then means
  // that none of those changes anything.
  RunReport run(EGraph& g, const RunLimits& limits, const CancelToken* cancel, const std::function<bool()>& goal, const std::vector<bool>& active);

  const std::vector<RuleStats>& stats() const { return stats_; }
  // Called for every application, whether or not it changed anything: (rule, matched node id, result id).
  std::function<void(size_t, Id, Id)> on_apply;
  size_t match_limit = 1000;  // initial scheduler threshold per rule per iteration
  size_t ban_length = 5;      // initial ban, in iterations

 private:
  struct Schedule {
    size_t times_banned = 0;
    size_t banned_until = 0;
  };
  const std::vector<Rewrite>* rules_;
  std::vector<RuleStats> stats_;
  std::vector<Schedule> schedule_;
  size_t iteration_ = 0;  // across runs, so bans survive between calls on a resident e-graph
};

}  // namespace prism::eg
