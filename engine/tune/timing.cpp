#include "engine/tune/timing.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace prism::tune {

TimingPolicy timing_policy_from_env() {
  TimingPolicy policy;
  if (const char* v = std::getenv("PRISM_TUNE_NOISE_LIMIT"); v && *v) {
    if (std::string(v) == "off") {
      policy.noise_limit = 1e300;
      policy.load_makes_noisy = false;
      policy.attempts = 1;  // whatever a second attempt found, its answer would be kept: one suffices
    } else {
      char* end = nullptr;
      const double limit = std::strtod(v, &end);
      if (end && *end == '\0' && limit >= 0) policy.noise_limit = limit;  // 0: every measurement disagrees
    }
  }
  return policy;
}

Provisional provisional_policy_from_env() {
  const std::string v = std::getenv("PRISM_TUNE_PROVISIONAL") ? std::getenv("PRISM_TUNE_PROVISIONAL") : "";
  if (v == "keep") return Provisional::Keep;
  if (v == "remeasure") return Provisional::Remeasure;
  return Provisional::Quiet;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

namespace {

// The q-quantile by linear interpolation between the sorted values.
double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * double(sorted.size() - 1);
  const size_t lo = size_t(at);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - double(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

double relative_spread(std::vector<double> v) {
  if (v.size() < 2) return 0;
  std::sort(v.begin(), v.end());
  const double m = median_of(v);
  return m > 0 ? (quantile(v, 0.75) - quantile(v, 0.25)) / m : 0;
}

CpuSample sample_cpu(int pid) {
  CpuSample s;
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || cpu != "cpu") return s;
  s.busy = user + nice + system + irq + softirq;
  s.steal = steal;
  s.total = s.busy + idle + iowait + steal;
  if (pid > 0) {
    // /proc/PID/stat: "PID (COMM) STATE …", utime and stime are the 14th and 15th fields; COMM
    // may hold spaces and parentheses, so the fields are counted from the last ')'.
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(in, line);
    if (size_t close = line.rfind(')'); close != std::string::npos) {
      std::istringstream fields(line.substr(close + 1));
      std::string field;
      uint64_t utime = 0, stime = 0;
      for (int i = 3; i <= 13 && fields >> field; ++i) {
      }
      if (fields >> utime >> stime) s.process = utime + stime;
    }
  }
  s.valid = true;
  return s;
}

Load load_between(const CpuSample& before, const CpuSample& after, int cores) {
  Load load;
  if (!before.valid || !after.valid || after.total <= before.total || cores < 1) return load;
  const double total = double(after.total - before.total);
  const double busy = double(after.busy - before.busy);
  const double own = after.process >= before.process ? double(after.process - before.process) : 0;
  load.foreign_cores = std::max(0.0, busy - own) / total * cores;
  load.steal = double(after.steal - before.steal) / total;
  return load;
}

int own_worker_after(int before, int now) { return before == 0 || now == before ? now : 0; }

namespace {

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", fraction * 100);
  return text;
}

// Fills each item's median and spread, the best item, its speedup and its per-round ratios' spread.
void summarize(Measurement& m, bool has_baseline) {
  for (ItemTiming& item : m.items)
    if (!item.failed) {
      item.median_ms = median_of(item.rounds);
      item.spread = relative_spread(item.rounds);
    }
  m.best = -1;
  for (size_t i = has_baseline ? 1 : 0; i < m.items.size(); ++i)
    if (!m.items[i].failed && (m.best < 0 || m.items[i].median_ms < m.items[size_t(m.best)].median_ms)) m.best = int(i);
  m.speedup = m.ratio_spread = 0;
  if (!has_baseline || m.items.empty() || m.items[0].failed || m.best < 0) return;
  const ItemTiming &base = m.items[0], &best = m.items[size_t(m.best)];
  std::vector<double> ratios;
  for (size_t r = 0; r < base.rounds.size() && r < best.rounds.size(); ++r)
    if (best.rounds[r] > 0) ratios.push_back(base.rounds[r] / best.rounds[r]);
  m.speedup = best.median_ms > 0 ? base.median_ms / best.median_ms : 0;
  m.ratio_spread = relative_spread(ratios);
}

// Why the rounds cannot be trusted: "" when they agree.
std::string disagreement(const Measurement& m, bool has_baseline, const TimingPolicy& policy) {
  if (has_baseline && !m.items.empty() && !m.items[0].failed && m.items[0].spread >= policy.noise_limit)
    return "the eager baseline's rounds disagree (spread " + percent(m.items[0].spread) + ")";
  if (m.best >= 0 && m.ratio_spread >= policy.noise_limit)
    return "the best's ratio to the baseline varies between rounds (spread " + percent(m.ratio_spread) + ")";
  if (m.best >= 0 && m.items[size_t(m.best)].spread >= policy.noise_limit && !(has_baseline && !m.items[0].failed))
    return "the best's rounds disagree (spread " + percent(m.items[size_t(m.best)].spread) + ")";
  return "";
}

std::string machine_contention(const Load& load, const TimingPolicy& policy) {
  char text[96];
  if (load.foreign_cores > policy.foreign_limit) {
    std::snprintf(text, sizeof text, "other processes used %.1f cores", load.foreign_cores);
    return text;
  }
  if (load.steal > policy.steal_limit) return "the hypervisor took " + percent(load.steal) + " of the CPU time";
  return "";
}

}  // namespace

std::string machine_busy(const TimingPolicy& policy, int cores, double seconds) {
  const CpuSample before = sample_cpu(::getpid());
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return machine_contention(load_between(before, sample_cpu(::getpid()), cores), policy);
}

Measurement measure_interleaved(size_t items, bool has_baseline, const TimingPolicy& policy,
                                const std::function<RoundTime(size_t item)>& time_round, const LoadWatch& watch_load,
                                const std::function<void(int attempt, int round)>& round_done) {
  Measurement m;
  m.items.resize(items);
  const int attempts = std::max(1, policy.attempts), rounds = std::max(1, policy.rounds);
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    m.remeasured = m.contention;
    for (ItemTiming& item : m.items) item.rounds.clear();
    std::function<Load()> load_since = watch_load ? watch_load() : std::function<Load()>{};
    for (int r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < items; ++i) {
        ItemTiming& item = m.items[i];
        if (item.failed) continue;
        RoundTime t = time_round(i);
        if (!t.ok) {
          item.failed = true;
          item.error = t.error;
          item.transient = t.transient;
          continue;
        }
        item.rounds.push_back(t.ms);
      }
      if (round_done) round_done(attempt, r + 1);
    }
    m.attempts = attempt;
    m.rounds = rounds;
    m.load = load_since ? load_since() : Load{};
    summarize(m, has_baseline);
    const std::string why = disagreement(m, has_baseline, policy);
    m.contention = !why.empty() ? why : machine_contention(m.load, policy);
    m.noisy = !why.empty() || (!m.contention.empty() && policy.load_makes_noisy);
    if (m.contention.empty()) break;
  }
  return m;
}

}  // namespace prism::tune
