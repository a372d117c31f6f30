// The engine's front door: the open documents, the programs they define, and queries on them.
// Thread-safe: every method may be called from any thread. No JSON here; protocol/ maps JSON-RPC
// onto these calls (the clangd split: ClangdServer vs ClangdLSPServer).
#pragma once
#include <cstdint>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/interp/footprint.h"
#include "engine/cancel.h"
#include "engine/diagnostic.h"
#include "engine/egraph/equivalence.h"
#include "engine/error.h"
#include "engine/search/search.h"
#include "engine/search/search_store.h"
#include "engine/tune/tune_db.h"
#include "engine/tune/tuner.h"

namespace prism {

// One tensor as shown to users: its dims printed in the language ("n", "d/2", "8").
struct TensorView {
  std::string name;
  std::string dtype;               // "f32" | "f16" | "bf16"
  std::vector<std::string> shape;  // symbolic dims, printed
  std::string op;                  // for values: the op that computes it ("matmul"); empty for inputs
  std::string domain;              // an input's declared domain: ">= 0", "> 0", or empty
  SourcePos pos;                   // where it is defined in the source
};

struct ProgramSummary {
  std::string name;
  std::string uri;                 // document that defines it
  SourceRange pos;                 // its name in that document
  std::vector<TensorView> inputs;
  std::vector<TensorView> outputs;
  std::vector<std::string> dims;   // symbolic dim names, in order of first appearance
};

struct ProgramDetail {
  ProgramSummary summary;
  std::vector<TensorView> values;  // every named value of the source, with inferred shapes
  std::string signature;           // "program p(X: f16[n, d], W: f16[d, d]) -> f16[n, d]"
  std::string lowered;             // the program with composites lowered to primitives, in the language
};

struct DocumentState {
  std::string uri;
  int64_t version = 0;
  std::vector<std::string> programs;  // names of programs that parsed and type-checked
  Diagnostics diagnostics;            // the full current set (empty: clean)
  std::vector<std::string> replaced;  // open(…, replace=true): other documents closed because
                                      // this one defines a program of the same name
  bool rejected = false;              // open(…, reject_errors=true): the text has errors of its own
                                      // and was not kept (nothing changed)
};

struct RunRequest {
  std::string program;
  std::map<std::string, int64_t> bindings;           // dim name -> value; may be partial when
                                                     // input files determine the rest
  uint64_t seed = 0;                                 // for inputs not given as files
  std::map<std::string, std::string> input_files;    // input name -> .npy path
  std::string output_file;                           // optional: write outputs as .npy
                                                     // (several outputs: NAME.npy → NAME.<out>.npy)
  size_t head = 8;                                   // how many leading values to report
};

struct OutputSummary {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  double sum = 0;      // checksum: sum of the finite values (f64 accumulation)
  double abs_sum = 0;  // sum of their |values|
  int64_t nan = 0, pos_inf = 0, neg_inf = 0;  // the values that are not finite (not in the sums)
  std::vector<double> head;  // the first `head` values in row-major order
  std::string file;    // where it was written, when an output file was asked for
};

struct RunResult {
  std::string program;
  std::map<std::string, int64_t> bindings;  // the complete bindings used
  std::vector<OutputSummary> outputs;
  double elapsed_ms = 0;  // interpreter time
  std::vector<std::string> random_inputs;  // the inputs drawn from the seed (no file given), in order
};

// The largest document text, read from a file (program/open of a path, a restored document) or
// sent by a client: a program is a few KiB; this bounds what a wrong path (a log, an image) costs.
constexpr size_t kMaxDocumentBytes = size_t(16) << 20;
// All open documents' texts together: the daemon keeps them on disk in one store, which it must
// be able to read back (daemon/document_store.cpp reads at most 4 times this, JSON's escapes
// included). An open or change past it is refused (issue 46, 4).
constexpr size_t kMaxOpenTextBytes = size_t(64) << 20;

class Workspace {
 public:
  Workspace();
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // Opens (or replaces) a document. Never throws for bad program text: problems come back as
  // diagnostics. A program whose name is already defined by another open document is a diagnostic,
  // unless `replace`: then those other documents are closed first (listed in `replaced`), as a
  // REPL user who opens a file or types a program again means. With `reject_errors`, a text with
  // errors of its own (not counting clashes that `replace` would resolve) changes nothing: its
  // diagnostics come back with `rejected` (a typed block that does not compile is not kept).
  DocumentState open(const std::string& uri, const std::string& text, int64_t version, bool replace = false,
                     bool reject_errors = false);
  // Replaces the text of an open document. Throws NotFound for an unknown uri and
  // InvalidArgument when version is not greater than the current one.
  DocumentState change(const std::string& uri, const std::string& text, int64_t version);
  // Throws NotFound for an unknown uri.
  void close(const std::string& uri);

  std::optional<DocumentState> document(const std::string& uri) const;
  std::optional<std::string> text(const std::string& uri) const;
  std::vector<std::string> documents() const;

  std::vector<ProgramSummary> programs() const;
  // The programs an open document defines (that compiled), in source order. Throws NotFound for
  // an unknown uri.
  std::vector<ProgramDetail> document_programs(const std::string& uri) const;
  // Throws NotFound (with the known names in the message) for an unknown program.
  ProgramDetail show(const std::string& program) const;
  // Runs the reference interpreter. Throws NotFound, InvalidArgument (missing/contradictory
  // bindings, bad input files), Failed, or Cancelled when `cancel` fires.
  RunResult run(const RunRequest& request, const CancelToken* cancel = nullptr) const;

  // Are two tensor computations equal? `a` and `b` are each a program name or an inline
  // expression over the inputs of a program (`matmul(X, W) / rms(X)`); at least one side must
  // name a program, which gives the context (inputs, dims) of an inline expression. Dims an
  // expression introduces in a reshape (`reshape(X, [n, F, d/F])`) become extra symbolic dims.
  // First a numeric check with the reference interpreter (Refuted with a counterexample), then a
  // proof in the workspace's resident e-graph. Throws NotFound (unknown program) or
  // InvalidArgument (an expression that does not compile, no side naming a program).
  EquivResult equivalent(const std::string& a, const std::string& b, const EquivLimits& limits, const CancelToken* cancel = nullptr);
  // The resident e-graph: size, the node cap, per-rule statistics, terms added vs shared.
  EGraphStats egraph_stats() const;

  // The symbolic search (engine/search/search.h) for a program's current version. Throws NotFound
  // (unknown program) or Cancelled. Long work runs without the workspace mutex. The result is
  // stored for (program, current version); a repeated search of an unchanged program with the
  // same limits returns the stored result. `progress` is called at most ~10 times a second.
  // `dump` (pipeline.h): what the passes from parsing to the search's last leave, for the one it
  // asks for; a search it asks a dump of runs again, whatever is stored.
  SearchResult search(const std::string& program, const SearchLimits& limits,
                      const CancelToken* cancel = nullptr,
                      const std::function<void(const SearchProgress&)>& progress = {}, pipeline::Dump* dump = nullptr);
  // The stored result for the program's CURRENT version, if any (an edit invalidates it).
  std::optional<SearchResult> search_result(const std::string& program) const;

  // What this machine knows of the question an imported result names: its roofline (0 when its
  // target is not here) and the largest of its program's tensors at its bindings (both 0 when the
  // program text does not compile or the bindings do not fit it).
  tune::ClaimLimits claim_limits(const tune::TuneResult& result) const;
  // The lowered program and the version of its document. Throws NotFound.
  std::pair<Program, int64_t> lowered_program(const std::string& program) const;

  // --- Tuning (engine/tune; workspace_tune.cpp) ---
  // Where the tuning DB lives (<dir>/tune) and the kernel cache and CPU description
  // (<cache_dir>); empty: the DB in memory only, the default cache.
  void set_storage(const std::string& data_dir, const std::string& cache_dir);
  // The lock file that lets one tune at a time run on this machine (tune/machine_lock.h); the
  // default is the user's, shared by all their daemons; empty: none.
  void set_tune_lock(const std::string& path);
  std::string tune_lock_path() const;
  // Where the engine reports what it repaired or could not store (a dropped DB entry); unset: silent.
  void set_log(std::function<void(const std::string&)> log);
  // The most memory one run, search or tune may take (the sum over its tensors, estimated before
  // anything is allocated); a request over it is InvalidArgument. Default: half the machine's memory.
  void set_memory_budget(int64_t bytes) { memory_budget_.store(bytes); }
  int64_t memory_budget() const { return memory_budget_.load(); }
  // The targets this workspace can tune for, each with whether it is available and why not.
  std::vector<tune::TargetStatus> targets() const;
  // The target's description as this workspace's tunes use it, described (the CPU measured) on
  // first use. Throws Error{Failed} when describing fails.
  backend::TargetDescription described(backend::Target target) const;
  // Tunes a program's verified families for concrete dims (searching first, with default
  // limits, when it has no search result at its current version). A question the tuning DB has
  // answered before is answered from it without compiling or running anything (from_db).
  // Throws NotFound, InvalidArgument (bindings, target), Failed, Cancelled.
  tune::TuneResult tune(const std::string& program, const tune::TuneRequest& request, const CancelToken* cancel = nullptr,
                        const std::function<void(const tune::TuneProgress&)>& progress = {});
  // The tuning results of the program's current version asked in this workspace, latest last.
  std::vector<tune::TuneResult> tune_results(const std::string& program) const;

  // A batch (docs/tuning.md, "Batches"): jobs, each a tune of an open program, run one after
  // another. A program is searched once (its first job's tune searches, the others reuse the
  // result); a job the tuning DB answers measures nothing, so a batch stopped part way resumes
  // where it stopped; a job that fails is reported and the batch goes on. Throws Cancelled.
  struct BatchJob {
    std::string program;
    tune::TuneRequest request;
  };
  struct BatchOutcome {
    bool ok = false;
    tune::TuneResult result;  // when ok (from_db: nothing measured)
    std::string error;        // when not
  };
  struct BatchProgress {
    int done = 0, failed = 0, left = 0;
    std::string job;  // the one that runs now: "rms_linear d=64 n=4 on cpu"
  };
  std::vector<BatchOutcome> tune_batch(const std::vector<BatchJob>& jobs, const CancelToken* cancel = nullptr,
                                       const std::function<void(const BatchProgress&)>& progress = {});
  // The tuning DB as one text (every entry, tune_db.h) and back: what `prism db export` and
  // `db import` carry between machines (docs/tuning.md, "Sharing a tuning DB").
  // With `program`, its entries only; with `bindings` too, those at these bindings.
  tune::DbExport export_tuning_db(const std::string& program = "", const std::map<std::string, int64_t>& bindings = {}) const;
  tune::DbImport import_tuning_db(std::string_view entries);
  // A kernel's source: family `candidate` (0: the best of the latest tune) at `bindings` (empty:
  // the latest tune's), with the tuned sizes when that family was timed, else the cost model's;
  // `sizes` (grid sizes and loop ranges, e.g. g1=1) where given.
  // `dump`: what instantiating, lowering and printing it leave, for the pass it asks for.
  // `schedule`: generated at it (one the target offers), the family and sizes the cost model's
  // on the target it schedules (Backend::scheduled_target) where the tune gave none.
  tune::KernelSource kernel_source(const std::string& program, int candidate, const std::map<std::string, int64_t>& bindings,
                                   backend::Target target, const std::map<std::string, int64_t>* sizes = nullptr,
                                   pipeline::Dump* dump = nullptr, const backend::Schedule* schedule = nullptr);
  // The same kernel compiled, as a shared object a caller loads and calls in its own process
  // (backend.h, Backend::library). Throws Error{InvalidArgument} where the target gives none or
  // cannot run here, Error{Failed} when compiling fails.
  tune::KernelLibrary kernel_library(const std::string& program, int candidate, const std::map<std::string, int64_t>& bindings,
                                     backend::Target target);
  // The eager baseline's plan at `bindings` (the program op by op, as the tuner times and checks
  // it beside the families), compiled the same way: what a caller runs where it beat every family.
  tune::KernelLibrary eager_library(const std::string& program, const std::map<std::string, int64_t>& bindings, backend::Target target);

 private:
  struct Impl;
  struct TuneState;
  static std::shared_ptr<TuneState> make_tune_state();
  std::shared_ptr<TuneState> tune_state_;
  search::SearchStore search_store() const;  // where complete searches are kept (set_storage)
  void sync_egraph() const;  // brings the resident e-graph up to date with the open programs
  mutable std::mutex mutex_;
  mutable std::mutex egraph_sync_;  // held while syncing, taken before mutex_
  std::unique_ptr<Impl> impl_;
  std::atomic<int64_t> memory_budget_{default_memory_budget()};
};

}  // namespace prism
