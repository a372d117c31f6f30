// Measurements kept in the repository (docs/tuning.md, "Stored measurements"): a row per timed
// instantiation of a tune, with what a later cost model needs to rank it again (the family's
// sGraph as the backend stored it, its sizes, the machine's description), written as CSV under
// bench/gpu/ by the GPU bench; and the regret of today's cost model over such rows. A GPU is lent
// rarely: the work between leases calibrates the model against what the last one measured.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/target.h"
#include "engine/search/search.h"
#include "engine/tune/tuner.h"

namespace prism::tune {

struct StoredRow {
  std::string date;                          // the UTC day the tune ran, "2026-11-29"
  std::string workload;                      // the program's name
  std::map<std::string, int64_t> bindings;   // its dims
  int candidate = 0;                         // the family's id in that search
  uint64_t family = 0;                       // its canonical hash
  std::string graph;                         // the family as the backend stored it (sgraph/print.h)
  std::map<std::string, int64_t> sizes;      // grid sizes and loop ranges
  int threads = 0;                           // the CPU's threads, a GPU's default threads per block
  backend::Schedule schedule;                // the backend's choices beyond the sizes (a GPU's threads per block)
  int cost_rank = 0;                         // among every instantiation, when it was measured
  double predicted_ms = 0;                   // that cost model's estimate
  double memory_bytes = 0, flops = 0;        // the compulsory bytes and the flops of the instance
  bool ok = false;                           // passed its check and was timed
  double measured_ms = 0, spread = 0;        // median of its rounds and their spread
  std::string error;                         // why not ok
  double baseline_ms = 0, roofline_ms = 0;   // the eager baseline's and the roofline of the shape
  int tuner_revision = 0;
  backend::TargetDescription target;         // the machine as the tuner described it
};

// The rows of `result` (a tune of `families`, a search's candidates, on `target`) as measurements;
// rows whose family is not in `families` are left out. The graphs are stored as `backend` stores
// them (Backend::stored).
std::vector<StoredRow> measurements(const TuneResult& result, const std::vector<Candidate>& families, const backend::Backend& backend,
                                      const backend::TargetDescription& target);

// The CSV's first line, and rows as CSV records (the target's features through its backend:
// Backend::features_text), and back. parse_measurements takes a header line first and throws
// Error{InvalidArgument} naming the line of a record it cannot read.
std::string measurements_header();
std::string measurements_csv(const std::vector<StoredRow>& rows);
std::vector<StoredRow> parse_measurements(std::string_view csv);

// The cost model's regret on one shape measured on one machine on one day: its first choice is
// the ok row it estimates cheapest today (sgraph::instantiate of the stored graph at the stored
// sizes, estimate_cost on the stored description; among equal estimates the lower rank it had,
// then the backend's default schedule); the regret is that row's measured time over the best
// measured (1: the model alone would have picked the best).
struct ShapeRegret {
  std::string device, date, workload;
  std::map<std::string, int64_t> bindings;
  int ranked = 0;     // ok rows estimated again
  std::vector<std::string> unranked;  // ok rows that no longer parse or instantiate, and why
  int first_candidate = 0;
  std::map<std::string, int64_t> first_sizes;
  backend::Schedule first_schedule;
  double first_ms = 0, best_ms = 0, regret = 0;  // regret 0 where nothing was ranked
  // The same for the model that measured them: its first choice by the stored cost ranks.
  double stored_regret = 0;
};
std::vector<ShapeRegret> model_regret(const std::vector<StoredRow>& rows);

}  // namespace prism::tune
