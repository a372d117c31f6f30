// The timing protocol (docs/tuning.md, "Trustworthy ratios"): after its numeric check, every item
// (the eager baseline and each candidate that passed) is timed in rounds, interleaved in one
// worker (A B C … A B C …), so that load which comes and goes while the tuner runs falls on all of
// them alike. An item's time is the median of its round times and its spread the interquartile
// range over that median; the speedup is the ratio of the baseline's median to the best's, so
// every ratio a table shows is one of the times it shows (docs/tuning.md, "The table"). The
// per-round ratios baseline / best say whether the rounds agree.
//
// An attempt is contended when the baseline's rounds disagree, the best's per-round ratios
// disagree, other processes used more than `foreign_limit` cores or the hypervisor stole more than
// `steal_limit` of the CPU time: it is then measured again (at most `attempts` in all). The last
// attempt stands; where it is still contended (its rounds disagree, or the load is still there),
// the result is noisy: the table says so and the tuning DB does not keep it. Rounds that agree
// under steady load are not enough: load changes the ratio itself (a gated MLP's eager baseline
// and its fused kernel slow down unlike each other when other processes hold the cores).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace prism::tune {

struct TimingPolicy {
  int rounds = 5;             // rounds per attempt
  int attempts = 2;           // at most this many attempts in all (one re-measure)
  double noise_limit = 0.2;   // relative spread at or above which rounds disagree
  double foreign_limit = 0.5; // other processes' CPU use, in cores
  double steal_limit = 0.05;  // the fraction of CPU time the hypervisor took
  bool load_makes_noisy = true;  // a last attempt under load is noisy (false: only disagreeing rounds are)
};

// The policy with PRISM_TUNE_NOISE_LIMIT (a relative spread at or above which rounds disagree; 0:
// every measurement disagrees; "off": never noisy, load or not, and measured once) applied.
TimingPolicy timing_policy_from_env();

// What becomes of a provisional result: a noisy one, stored with its spread and answered at once
// (docs/tuning.md, "Provisional results"). PRISM_TUNE_PROVISIONAL: "quiet" (the default) answers
// it while the machine is busy and measures it again at the first question asked while it is
// quiet; "keep" answers it until a fresh tune (`tune --fresh`); "remeasure" measures it again at
// every question (no answer is ever taken from load).
enum class Provisional { Quiet, Keep, Remeasure };
Provisional provisional_policy_from_env();

// Why the machine is too busy to time on ("" when it is quiet): other processes' CPU use and the
// hypervisor's steal over `seconds`, against `policy`'s limits, the calling process not counted.
std::string machine_busy(const TimingPolicy& policy, int cores, double seconds = 0.25);

// The median of `v` (0 when empty) and its interquartile range over the median (0 with fewer
// than 2 values, or a zero median).
double median_of(std::vector<double> v);
double relative_spread(std::vector<double> v);

// The machine's CPU time and one process's (clock ticks, /proc), to tell other processes' load
// from the worker's own.
struct CpuSample {
  uint64_t busy = 0, steal = 0, total = 0;  // every CPU together
  uint64_t process = 0;                     // the process's user + system time
  bool valid = false;
};
CpuSample sample_cpu(int pid);

struct Load {
  double foreign_cores = 0;  // CPUs' worth of time that other processes used
  double steal = 0;          // fraction of the CPU time stolen
};
// `cores`: the machine's CPUs. Zero where either sample is invalid.
Load load_between(const CpuSample& before, const CpuSample& after, int cores);

// Whose CPU time is the tuner's own at the end of an attempt that began with worker `before` (0:
// none running): the same worker's, or one started during the attempt where none ran (the
// runner stops its worker when its inputs change, and the first round starts the next; its whole
// time is the attempt's). 0 where a worker replaced another (a crash): the time counts as
// foreign, and the attempt is measured again.
int own_worker_after(int before, int now);

// One round of one item: its median time, or why it failed.
struct RoundTime {
  bool ok = false;
  double ms = 0;
  std::string error;
  bool transient = false;
};

struct ItemTiming {
  std::vector<double> rounds;  // ms, the last attempt's
  double median_ms = 0, spread = 0;
  bool failed = false;         // a round failed: `error` says why, the item's times are void
  std::string error;
  bool transient = false;
};

struct Measurement {
  std::vector<ItemTiming> items;
  int attempts = 0, rounds = 0;     // attempts made, rounds in the last
  Load load;                        // during the last attempt
  int best = -1;                    // the fastest item after the baseline that did not fail
  double speedup = 0;               // the baseline's median over the best's
  double ratio_spread = 0;          // the spread of the best's per-round ratios (baseline / best)
  std::string contention;           // why the last attempt counted as contended, "" when quiet
  std::string remeasured;           // why the attempt before it was measured again, "" after one attempt
  bool noisy = false;               // the last attempt is contended: `contention` says why
};

// Starts watching the load and returns what reads the load since.
using LoadWatch = std::function<std::function<Load()>()>;

// Times `items` items in interleaved rounds: `time_round(i)` times item i once, `watch_load`
// measures each attempt's load, `round_done(attempt, round)` hears of each round. Item 0 is the
// baseline when `has_baseline`. An item that fails a round is not timed again.
Measurement measure_interleaved(size_t items, bool has_baseline, const TimingPolicy& policy,
                                const std::function<RoundTime(size_t item)>& time_round, const LoadWatch& watch_load,
                                const std::function<void(int attempt, int round)>& round_done);

}  // namespace prism::tune
