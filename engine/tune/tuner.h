// The tuner: for concrete dims on one backend (backend/backend.h: the CPU, a GPU), every verified
// family's instantiations are ranked by the cost model; the top K are generated, compiled,
// checked against the reference interpreter and timed in the kernel runner (a separate process),
// beside the eager baseline and the roofline. Nothing that fails its numeric check can be best.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/target.h"
#include "engine/cancel.h"
#include "engine/interp/tensor.h"
#include "engine/ir/program.h"
#include "engine/search/search.h"
#include "engine/tune/cost_model.h"
#include "engine/sgraph/instantiate.h"
#include "engine/tune/timing.h"

namespace prism::tune {

struct TuneRow {
  int candidate = 0;                     // the family's Candidate::id
  uint64_t family = 0;                   // its Candidate::hash: how a stored row finds its family in a later search (renumber)
  std::string summary;                   // the family's one-line summary
  std::map<std::string, int64_t> sizes;  // its grid sizes and loop ranges
  backend::Schedule schedule;            // how the backend ran it (a GPU's threads per block; empty on the CPU)
  int cost_rank = 0;                     // 1-based rank by the cost model among all instantiations
  double predicted_ms = 0;               // the cost model's estimate
  double measured_ms = 0;                // median of its round times (ok rows; engine/tune/timing.h)
  double spread = 0;                     // interquartile range of its round times over the median
  bool noisy = false;                    // spread above the timing policy's noise limit
  double speedup = 0;                    // the baseline's median over this row's (fill_ratios; 0 without either)
  double roofline_fraction = 0;          // roofline_ms / measured_ms, at most 1 (fill_ratios)
  double max_error = 0;                  // largest |kernel - reference| (ok rows)
  bool ok = false;
  std::string error;                     // compile error, crash, time-out, wrong result
  bool transient = false;                // the failure was not the kernel's (RunOutcome::transient)
};

struct TuneRequest {
  backend::Target target{};  // the CPU (target.h)
  std::map<std::string, int64_t> bindings;  // every dim of the program
  int top = 8;           // instantiations compiled and timed (by cost rank, at most half from one family)
  int threads = 0;       // the CPU's kernel threads; 0: the target's cores (a GPU's threads per block are the backend's)
  uint64_t seed = 0;     // random inputs (engine/interp/tensor.h)
  bool fresh = false;    // measure again even when the tuning DB holds the answer
  // `--check-with X=x.npy`: one more set for the numeric check (edge_check.h), the user's data in
  // place of those inputs. What a client gives: input -> .npy path; the workspace reads each file
  // into `check_with`, which is what tune_families uses. A tune with them is never answered from
  // the tuning DB.
  std::map<std::string, std::string> check_with_files;
  std::map<std::string, Tensor> check_with;
  // Rows another machine claims (an imported DB entry, renumbered to these families): when any of
  // them is a valid instantiation here, exactly those are built, checked and timed, in place of
  // the cost model's top K, so an import is measured here before it is served (docs/tuning.md,
  // "Sharing a tuning DB"). Rows whose family or sizes are not valid here are dropped.
  std::vector<TuneRow> claimed;
};

struct TuneStats {
  uint64_t instantiations = 0;  // valid instantiations over all families
  uint64_t compiled = 0;        // objects actually compiled (not found in the kernel cache)
  uint64_t cached = 0;          // objects found in the kernel cache
  double compile_s = 0, run_s = 0, total_s = 0;
};

// How a result was measured (issue 14): kept with it in the tuning DB.
struct Measured {
  std::string at;                // UTC, "2026-11-24T11:50:02Z"
  int rounds = 0, attempts = 0;  // interleaved rounds per attempt; attempts made (engine/tune/timing.h)
  double foreign_cores = 0;      // other processes' CPU use during the last attempt, in cores
  double steal = 0;              // the fraction of CPU time the hypervisor took then
  double baseline_spread = 0;    // the eager baseline's spread
  double ratio_spread = 0;       // the spread of the best's per-round ratio to the baseline
  std::string contention;        // why the last attempt counted as contended; "" when quiet
  std::string remeasured;        // why the attempt before it was measured again; "" after one
  bool noisy = false;            // the rounds disagreed: the table says so, the tuning DB keeps it as
                                 // provisional (TuneResult::provisional)
  bool queued = false;           // it waited for another tune on this machine first
  int tuner_revision = 0;
  uint64_t seed = 0;
  std::string search;            // the search limits the families came from ("ops=8 kernels=2 …")
  // Another machine's claim, not measured here: when it was imported (UTC). Such an entry is
  // never served as this machine's answer; a tune measures its rows here first.
  std::string imported;
  // A result measured here to confirm an import: when that import was made (UTC); "" otherwise.
  std::string confirmed;
};

struct TuneResult {
  std::string program;
  int64_t version = 0;
  backend::Target target{};  // the CPU (target.h)
  std::string target_model;    // "AMD EPYC, 2 cores, AVX-512"
  std::string toolchain;       // what built and ran the kernels (TargetDescription::toolchain)
  std::string lowered;         // the program as tuned (lowered, printed) and the prism that tuned it:
  std::string prism_version;   // with the fields above, what the DB key hashes (tune_db.h, entry_key)
  std::map<std::string, int64_t> bindings;
  int top = 0;
  int threads = 0;
  double bandwidth_gbs = 0, peak_gflops = 0;  // what the roofline assumes (memory or cache bandwidth)
  double baseline_ms = 0;      // the eager baseline (one kernel per op, OpenBLAS matmul)
  std::string baseline_error;  // when the baseline itself failed
  std::string baseline_note;   // how the baseline ran, where it matters ("16-bit matmul operands widened to f32 for sgemm")
  double input_range = 1;      // the checks' random inputs lie in [-input_range, input_range]
  std::string input_note;      // why they are narrower than [-1, 1] (the reference overflowed there)
  std::vector<std::string> edge_sets;   // the edge suite's sets every row was checked on (edge_suite.h), and the user's
  std::vector<std::string> edge_notes;  // sets the eager baseline failed, sets whose reference is nowhere finite
  double best_ms = 0;          // 0 when no candidate passed
  double speedup = 0;          // the best row's: baseline_ms / best_ms (fill_ratios)
  double roofline_ms = 0;      // max(compulsory bytes / bandwidth, flops / peak), at most best_ms
  double roofline_drawn_ms = 0;  // where the best ran faster than the roofline drawn from the
                                 // measured peaks, that roofline (roofline_ms is then best_ms); else 0
  double roofline_fraction = 0;  // roofline_ms / best_ms
  std::string roofline_bound;  // "memory", "cache" (memory-bound, working set in the caches), "compute"
  int best = -1;               // index into rows
  std::vector<TuneRow> rows;   // the timed instantiations: ok rows by time, then failures
  double rank_correlation = 0; // Spearman, predicted vs measured, over the ok rows (0 with < 3)
  TuneStats stats;
  bool from_db = false;        // answered by the tuning DB, nothing compiled or run
  bool provisional = false;    // noisy, and stored all the same: the DB answers it until a quiet
                               // machine measures it again (docs/tuning.md, "Provisional results")
  bool transient = false;      // a run failed for a reason that was not its kernel's: not stored
  Measured measured;
};

struct TuneProgress {
  std::string phase;  // "queued", "reference", "ranking", "compiling", "checking", "timing"
  int done = 0, total = 0;
  double elapsed_s = 0;
  std::string detail; // "queued": who holds the machine ("prismd 1234: my_layer d=1024 n=8")
};

struct TuneEnvironment {
  backend::TargetDescription target;
  std::string kernel_cache_dir;  // empty: the default
  std::string runner_path;       // empty: the default (prism-runner next to the executable)
  TimingPolicy timing;           // rounds, attempts and noise limits (engine/tune/timing.h)
};

// Bumped whenever code generation, the cost model or the timing method changes what a tune would
// answer, so results of an older tuner (same PRISM_VERSION, e.g. a development build) are not reused.
constexpr int kTunerRevision = 65;  // what each revision changed: docs/tuning.md, "Tuner revisions"

// Every ratio of a result from its times, by one definition (docs/tuning.md, "The table"): a
// row's speedup is the eager baseline's median over the row's, both medians of the same
// interleaved rounds, and the result's speedup is the best row's. A roofline is a time no
// kernel beats: where the best did, the peaks it was drawn from were below what the machine
// reaches, so it is raised to the best's time (roofline_drawn_ms keeps the drawn one) and no
// fraction exceeds 1. Sets best_ms, speedup and roofline_fraction too; idempotent.
void fill_ratios(TuneResult& result);

// `lowered`: the program (at its declared dtypes: the backend stores it its way); `families`: its
// verified search candidates; `env.target`: the backend's description of its machine. The
// reference is computed at the backend's storage dtypes; each output is checked at the backend's
// tolerance for its dtype. Throws Error{InvalidArgument} (bindings), Error{Failed} (no runner),
// Error{Cancelled}.
TuneResult tune_families(const backend::Backend& backend, const Program& lowered, const std::vector<Candidate>& families,
                         const TuneRequest& request, const TuneEnvironment& env, const CancelToken* cancel = nullptr,
                         const std::function<void(const TuneProgress&)>& progress = {});

// One family at concrete dims: the best instantiation by the cost model, or by `sizes` when given.
struct KernelChoice {
  std::map<std::string, int64_t> sizes;
  backend::Schedule schedule;  // as the backend resolved it (its default where none was asked)
  backend::Build build;     // generate()'s: its source (the CPU's implements engine/backend/cpu/abi.h)
                            // and what running it needs (a CUDA plan)
  CostEstimate estimate;    // the cost model's, for this instance on the target
};
// `graph` (a family, retyped for the target's storage) at `bindings`: the cheapest instantiation
// by the cost model, or the one with `sizes`. Throws Error{InvalidArgument} (bindings, sizes, or
// no valid instantiation).
sgraph::Instance choose_instance(const Program& lowered, const sgraph::SGraph& graph, int family_id,
                                 const std::map<std::string, int64_t>& bindings, const backend::TargetDescription& target,
                                 const std::map<std::string, int64_t>* sizes = nullptr);
// An instance's grid sizes and loop ranges (without the tensor dims).
std::map<std::string, int64_t> instance_sizes(const sgraph::Instance& instance);
// The family's source on `backend` for `target` at `bindings`, with `schedule` (empty: the
// backend's default). Throws Error{InvalidArgument} (bindings, sizes, no valid instantiation, a
// schedule the backend does not offer, a family the backend cannot generate).
KernelChoice kernel_for(const backend::Backend& backend, const Program& lowered, const Candidate& family,
                        const std::map<std::string, int64_t>& bindings, const backend::TargetDescription& target,
                        const std::map<std::string, int64_t>* sizes = nullptr, const backend::Schedule& schedule = {},
                        pipeline::Dump* dump = nullptr);

// What the workspace answers for kernel/source and export.
struct KernelSource {
  std::string program;
  int candidate = 0;
  std::string summary;
  std::map<std::string, int64_t> bindings, sizes;
  backend::Schedule schedule;  // the backend's (a GPU's threads per block; empty on the CPU)
  backend::Target target{};  // the CPU (target.h)
  bool tuned = false;   // sizes from a timed instantiation (else the caller's or the cost model's)
  std::string source;   // the backend's source (the CPU's implements engine/backend/cpu/abi.h)
  std::string launch;   // what running the source also needs (backend::Build::launch: a CUDA plan)
  std::string symbol;   // what an export names it: prism_PROGRAM_DIMVALUE… ("prism_rms_linear_d4096_n8")
  std::string export_source;  // the source with its C ABI named after `symbol` (Backend::export_source)
  std::string header;   // a C header declaring the export, with the shapes in a comment (none on a GPU)
  CostEstimate estimate;  // the cost model's for these sizes (per kernel: estimate.kernel_seconds)
};

// What the workspace answers for kernel/library: the kernel and its compiled shared object.
struct KernelLibrary {
  KernelSource kernel;  // for the eager plan: candidate 0, no sizes
  std::string path;
  bool eager = false;   // the eager baseline's plan (one kernel per op), not a family's kernel
};

// A target and whether it can be used here ("cuda": no CUDA device …).
struct TargetStatus {
  backend::Target target{};  // the CPU (target.h)
  bool available = false;
  std::string detail;  // the model when available, else why not
};

// Spearman's rank correlation (ties share their average rank); 0 when undefined: fewer than 3
// values, or a constant list.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// The tuner's regret (issue 18): the measured time of the cost model's first choice (the timed,
// correct row of lowest cost rank) over the best measured time. 1: the cost model alone would
// have picked the best; 0 when nothing passed.
double regret(const TuneResult& result);

// The sizes of an instantiation as "g1=64 F1=16".
std::string sizes_text(const std::map<std::string, int64_t>& sizes);

}  // namespace prism::tune
