// prism_review_cuda [WORKLOAD...] [--check] [--families]: the static review of the CUDA kernel the
// cost model ranks first at each of issue 65's decode shapes (bench/review.h), at the default
// schedule and at the one of 2 blocks an SM (the tuner times both; each verdict gives the cost
// model's estimate, comparable across schedules), with no GPU: per
// kernel, its launch, ptxas's registers, spills, stack and shared memory on sm_90, the blocks and
// warps that fit on an SM and what limits them, and its global loads by width (of the program's
// inputs, of scratch such as split-k partials); then each shape's checks. --check: exit 1 where a check fails. --families: instead, every family the search
// found at each shape, cheapest estimate first, with the checks its kernel passes (--two-blocks:
// ranked and printed at the schedule of 2 blocks an SM).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "bench/review.h"
#include "engine/backend/cuda/nvrtc.h"

using namespace prism;
using namespace prism::bench;

namespace {

std::string widths_text(const std::map<int64_t, int>& widths) {
  std::string text;
  for (const auto& [bytes, count] : widths) text += (text.empty() ? "" : ", ") + std::to_string(count) + " x " + std::to_string(bytes) + " B";
  return text.empty() ? "none" : text;
}

// A kernel's loads of its plan's scratch (split-k partials): all its loads but its inputs'.
std::map<int64_t, int> scratch_widths(const backend::cuda::KernelReview& k) {
  std::map<int64_t, int> out;
  for (const auto& [bytes, count] : k.load_widths)
    if (int rest = count - (k.input_load_widths.count(bytes) ? k.input_load_widths.at(bytes) : 0); rest > 0) out[bytes] = rest;
  return out;
}

// Every family of each shape at the sizes the cost model picks for it, by estimate.
int review_families(Workspace& ws, const std::set<std::string>& only, const backend::Schedule& schedule) {
  std::set<std::string> opened;
  std::printf("| workload | shape | family | sizes | estimate us | bound | launches | blocks x threads (blocks/SM, warps/SM) | failed checks |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const Shape& s : decode_targets()) {
    if (!only.empty() && !only.count(s.workload)) continue;
    const std::string shape = tune::sizes_text(s.bindings);
    search_for_review(ws, opened, s);
    std::vector<std::pair<double, std::string>> rows;
    const size_t families = ws.search_result(s.workload)->candidates.size();
    for (size_t c = 1; c <= families; ++c) {
      try {
        const ShapeReview r = review_shape(ws, opened, s, int(c), schedule);
        std::string kernels, failed;
        for (const auto& k : r.review.kernels)
          kernels += (kernels.empty() ? "" : ", ") + std::to_string(k.launch.grid_blocks) + " x " + std::to_string(k.launch.threads) + " (" +
                     std::to_string(k.occupancy.blocks) + ", " + std::to_string(k.occupancy.warps) + ")";
        for (const auto& check : r.checks)
          if (!check.holds) failed += (failed.empty() ? "" : ", ") + check.name;
        char line[1024];
        std::snprintf(line, sizeof line, "| %s | %s | %zu | %s | %.1f | %s | %d | %s | %s |\n", s.workload, shape.c_str(), c,
                      tune::sizes_text(r.kernel.sizes).c_str(), r.kernel.estimate.seconds * 1e6, r.kernel.estimate.bound.c_str(),
                      r.review.launches(), kernels.c_str(), failed.empty() ? "none" : failed.c_str());
        rows.emplace_back(r.kernel.estimate.seconds, line);
      } catch (const std::exception& e) {
        rows.emplace_back(1e30, "| " + std::string(s.workload) + " | " + shape + " | " + std::to_string(c) + " | not reviewed: " + e.what() + " |\n");
      }
    }
    std::sort(rows.begin(), rows.end());
    for (const auto& [seconds, line] : rows) std::printf("%s", line.c_str());
    std::fflush(stdout);
  }
  return 0;
}

// The table's rows for the cost model's first choice at `s` (at `schedule` where it changes the
// target, the first of prism's own kernels alone, which the tuner always times there), and its
// verdict; whether every check holds.
bool review_row(Workspace& ws, std::set<std::string>& opened, const Shape& s, const backend::Schedule& schedule,
                std::vector<std::string>& verdicts) {
  const std::string shape = tune::sizes_text(s.bindings);
  try {
    const std::optional<ShapeReview> reviewed = schedule.empty() ? review_shape(ws, opened, s) : review_own_kernels(ws, opened, s, schedule);
    if (!reviewed) {
      verdicts.push_back(std::string(s.workload) + " " + shape + " at " + backend::schedule_text(schedule) + ": every family calls cuBLAS");
      return false;
    }
    const ShapeReview& r = *reviewed;
    const std::string candidate = std::to_string(r.kernel.candidate) + " " + tune::sizes_text(r.kernel.sizes);
    const std::string scheduled = backend::schedule_text(r.kernel.schedule);
    for (const auto& k : r.review.kernels) {
      const auto& res = k.resources;
      std::printf("| %s | %s | %s | %s | %s | %lld x %d | %lld | %d | %lld/%lld | %lld | %lld | %d | %d | %s | %s | %s | %lld |\n", s.workload,
                  shape.c_str(), candidate.c_str(), scheduled.c_str(), res.name.c_str(), (long long)k.launch.grid_blocks, k.launch.threads,
                  (long long)k.launch.shared_bytes, res.registers, (long long)res.spill_store_bytes, (long long)res.spill_load_bytes,
                  (long long)res.stack_bytes, (long long)res.static_shared_bytes, k.occupancy.blocks, k.occupancy.warps,
                  k.occupancy.limit.c_str(), widths_text(k.input_load_widths).c_str(), widths_text(scratch_widths(k)).c_str(),
                  (long long)(k.loads.ahead / 1024));
    }
    if (r.review.library_calls)
      std::printf("| %s | %s | %s | %s | %d cuBLAS call(s) | | | | | | | | | | | | |\n", s.workload, shape.c_str(), candidate.c_str(),
                  scheduled.c_str(), r.review.library_calls);
    char estimate[64];
    std::snprintf(estimate, sizeof estimate, " (estimated %.1f us)", r.kernel.estimate.seconds * 1e6);
    std::string verdict = std::string(s.workload) + " " + shape + " at " + scheduled + estimate + ":";
    bool holds = true;
    for (const auto& c : r.checks) {
      verdict += std::string(" ") + c.name + (c.holds ? " ok;" : " FAILS (" + c.why + ");");
      holds &= c.holds;
    }
    verdicts.push_back(verdict);
    return holds;
  } catch (const std::exception& e) {
    verdicts.push_back(std::string(s.workload) + " " + shape + " at " + backend::schedule_text(schedule) + ": not reviewed: " + e.what());
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::set<std::string> only;
  bool check = false, families = false;
  backend::Schedule schedule;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--check") == 0) check = true;
    else if (std::strcmp(argv[i], "--families") == 0) families = true;
    else if (std::strcmp(argv[i], "--two-blocks") == 0) schedule = two_blocks_an_sm();
    else only.insert(argv[i]);
  const backend::cuda::NvrtcStatus nvrtc = backend::cuda::nvrtc_status();
  if (!nvrtc.available) {
    std::printf("no static review: %s\n", nvrtc.detail.c_str());
    return check ? 1 : 0;
  }
  Workspace ws;
  ws.set_storage("", "");  // no tuning DB: the cost model's first choice
  if (families) return review_families(ws, only, schedule);
  std::set<std::string> opened;
  bool failed = false;
  std::printf("| workload | shape | candidate | schedule | kernel | blocks x threads | dyn. shared | regs | spills st/ld | stack | static shared | blocks/SM | warps/SM | limit | loads of inputs | loads of scratch | in flight a block (KiB) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<std::string> verdicts;
  for (const Shape& s : decode_targets()) {
    if (!only.empty() && !only.count(s.workload)) continue;
    for (const backend::Schedule& schedule : {backend::Schedule{}, two_blocks_an_sm()})
      failed |= !review_row(ws, opened, s, schedule, verdicts);
    std::fflush(stdout);
  }
  const backend::cuda::SmLimits sm = backend::cuda::sm90_limits();
  std::printf("\n%s; sm_90 limits: %d threads, %d blocks, %d registers, %lld bytes of shared memory an SM, %d SMs\n", nvrtc.detail.c_str(),
              sm.max_threads, sm.max_blocks, sm.registers, (long long)sm.shared_bytes, sm.sms);
  for (const std::string& v : verdicts) std::printf("- %s\n", v.c_str());
  return check && failed ? 1 : 0;
}
