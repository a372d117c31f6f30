// A backend: everything the tuner (tune/tuner.h) needs from one kind of machine, so that one tuning
// flow drives the CPU (cpu/cpu_backend.h) and a GPU (cuda/cuda_backend.h) alike: describe the
// device, say whether kernels can run here, store a program at the backend's dtypes, generate the
// source of an instance or of the eager baseline, compile them, run and time them in the kernel
// runner's worker (both halves: the daemon's and the worker's), the tolerance a result is checked
// with, and the words people and the Python package read about it.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/cost_rules.h"
#include "engine/backend/kernel_ir.h"
#include "engine/backend/runner/runner.h"
#include "engine/backend/runner/worker_call.h"
#include "engine/backend/target.h"
#include "engine/cancel.h"
#include "engine/ir/program.h"
#include "engine/sgraph/instantiate.h"

namespace prism::backend {

// One thing the tuner times, a candidate instance or the eager baseline, from its source to what
// the kernel runner takes.
struct Build {
  std::string source;    // generated C++ or CUDA C++
  std::string launch;    // what running the compiled source also needs (the CUDA plan's text, without PTX)
  std::string runnable;  // what compile() made for the runner (a shared object's path; the CUDA plan with PTX)
  std::string error;     // why it cannot run (set by generate or compile); such a build is not run
  // The error is not the candidate's own: compiling failed (a full disk, a missing or killed
  // compiler, a time-out on a busy machine, an unsafe cache). Never stored as a tuning answer
  // (docs/protocol.md "Security", Faults); a candidate that cannot be generated is its own verdict.
  bool transient = false;
  bool cached = false;   // compile() found it in a cache
  std::string note;      // how an eager baseline runs where a person would want to know (16-bit matmuls)
};

// How a backend runs an instance beyond the family's sizes: named choices the tuner measures
// rather than the cost model deciding them (a GPU's threads per block). Empty: the backend's
// only way (docs/tuning.md, "Schedules").
using Schedule = std::map<std::string, int64_t>;
// "threads=256"; "default" for the empty schedule.
std::string schedule_text(const Schedule& schedule);

// A build made by `make`; an exception it throws becomes the build's error, after `what`.
Build make_build(const std::string& what, const std::function<void(Build&)>& make);

struct CompileSettings {
  std::string cache_dir;  // where compiled objects are kept (empty: the backend's default)
  int parallel = 1;       // compilers at once
};

struct RunSettings {
  std::vector<std::vector<int64_t>> output_shapes;  // in return order
  int threads = 1;                                  // the CPU's threads (the GPU's threads per block are in its source)
  double timeout_s = 0;                             // for the whole run; 0: the backend's default
  // false: the check, one call whose outputs come back (timed once); true: a timing round
  // (engine/tune/timing.h), the outputs not written back, the timed calls lasting about `round_s`
  // (at least 3 of them).
  bool round = false;
  double round_s = 0.03;
  // The dtypes the build's inputs and outputs are stored at, in order (the stored program's).
  std::vector<DType> input_dtypes, output_dtypes;
};

// A result is right when |got - want| <= rtol * |want| + atol * max|want| (tune/compare.h).
struct Tolerance {
  double rtol = 1e-3, atol = 1e-4;
};

class Backend {
 public:
  // `target`: the one the registry gives it (tune/backends.h).
  explicit Backend(Target target) : target_(target) {}
  virtual ~Backend() = default;

  Target target() const { return target_; }
  // How people and clients name the target ("cpu", "cuda"): unique among the registered backends.
  virtual const char* name() const = 0;
  // How the REPL, the protocol's answers and the Python package present the target and reach the
  // libraries it makes (library()): nothing outside the backend spells these.
  struct Presentation {
    std::string machine;  // a sentence's name for it: "the CPU", "the GPU"
    std::string threads;  // what a tune's thread count counts: "threads", "threads per block by default"
    std::string device;   // the torch device type its tensors are on: "cpu", "cuda"
    // What library() makes, for a caller's loader: "c-abi" (a shared object with cpu/abi.h's entry
    // points), "cuda-plan" (a plan for libprism_cuda_plan); "" where it makes none.
    std::string runtime;
  };
  virtual Presentation presentation() const = 0;
  // Whether kernels can be compiled and run here; the detail says what (a model) or why not.
  struct Availability {
    bool available = false;
    std::string detail;
  };
  virtual Availability availability() const = 0;
  // The machine: measured where the backend can (cached under cache_dir), else from a data sheet.
  // Throws Error{Failed} when describing it fails.
  virtual TargetDescription describe(const std::string& cache_dir) const = 0;
  // The threads the kernels run on for `requested` (0: the backend's choice): the CPU's threads,
  // a GPU's threads per block.
  virtual int threads(int requested, const TargetDescription& target) const = 0;

  // The program and a family as this backend stores their tensors: the reference is computed,
  // and candidates generated, at these dtypes.
  virtual Program stored(const Program& lowered) const = 0;
  virtual sgraph::SGraph stored(const sgraph::SGraph& family) const = 0;

  // The schedules an instance can run with on `target`, the backend's default first; the tuner
  // times the default for every instantiation it chooses and the others for the cheapest few.
  virtual std::vector<Schedule> schedules(const TargetDescription& target) const;
  // `schedule`, or the default (the first offered) where it is empty. Throws
  // Error{InvalidArgument} naming the schedules offered when it is not one of them.
  Schedule resolve_schedule(const Schedule& schedule, const TargetDescription& target) const;
  // The target the cost model ranks a schedule's instances on where the schedule changes what a
  // block may hold (a GPU's 2 blocks an SM: half the shared memory a block may use, twice the
  // blocks at once); nullopt where it changes nothing. The tuner times the cheapest instances
  // ranked on it at that schedule (docs/tuning.md, "Schedules").
  virtual std::optional<TargetDescription> scheduled_target(const Schedule& schedule, const TargetDescription& target) const;
  // The kernel IR an instance's kernels are printed from: lowered (lower.h) as this backend lowers,
  // with the rewrites it makes before printing (what `--dump-after lower` shows, pipeline.h).
  // The default: the common lowering. Throws Error{InvalidArgument} where it cannot lower.
  virtual kir::Program kernel_ir(const sgraph::Instance& instance, const TargetDescription& target, const Schedule& schedule) const;
  // Sources; failures to generate are the build's error, never an exception (a schedule the
  // backend does not offer among them). An empty schedule is the default.
  virtual Build generate(const sgraph::Instance& instance, const TargetDescription& target, const Schedule& schedule) const = 0;
  virtual Build eager(const Program& stored, const DimBindings& dims) const = 0;
  // A build whose kernel crashes ("crash") or never returns ("hang"), to test that a bad kernel
  // costs only its own candidate (PRISM_FAULT_INJECT, tune/tuner.cpp); an error build where the
  // backend plants none.
  virtual Build fault(const std::string& kind) const;
  // Compiles every build without an error, for `target` (a failure becomes its error).
  virtual void compile(std::vector<Build>& builds, const TargetDescription& target, const CompileSettings& settings) const = 0;
  // Runs a compiled build in the runner's worker: the checked call's outputs and the timing. The
  // daemon's half: it asks the runner for a run of its own (WorkerRun) that serve() below answers.
  virtual RunOutcome run(KernelRunner& runner, const Build& build, const RunSettings& settings, const CancelToken* cancel) const = 0;
  // The worker's half (prism-runner): loads what run() handed over, calls it once for the outputs
  // (unless a timing round), times it; "ok MEDIAN MIN RUNS" or "error …" (runner/worker_call.h).
  // It may throw: the error is the answer. The default runs nothing.
  virtual std::string serve(WorkerCall& call) const;
  // How close an output stored at `dtype` must be to the reference.
  virtual Tolerance tolerance(DType dtype) const = 0;
  // What the cost model and the roofline ask of this kind of machine (cost_rules.h).
  virtual const CostRules& cost_rules() const = 0;
  // A description's features (TargetDescription::features) as "key=value" words and back, for the
  // measurements kept in the repository (tune/measurements.h); "" where the backend has none.
  // read_features throws Error{InvalidArgument} for a word it does not know.
  virtual std::string features_text(const TargetDescription& target) const;
  virtual void read_features(std::string_view text, TargetDescription& target) const;

  // For `export`: the source a user compiles from `generated` (generate()'s build), with the
  // backend's C ABI named after `symbol` (so that several exports link into one program; the
  // source unchanged where the backend has no C ABI), and the declarations of what it defines, to
  // follow a header's comment (`guard`: its include guard; empty where the backend has none).
  virtual std::string export_source(const Build& generated, const std::string& symbol) const;
  virtual std::string header_declarations(const std::string& guard, const std::string& symbol) const;
  // For a caller that runs kernels in its own process (prism.compile): `generated` (generate()'s
  // or eager()'s build) compiled into what the backend's caller-side runtime loads, a file; its
  // path. The CPU's is a shared object with the C ABI of cpu/abi.h; the GPU's a plan file for
  // libprism_cuda_plan (cuda_plan/plan_library.h). Throws Error{InvalidArgument} where the backend
  // gives none, Error{Failed} when compiling fails.
  virtual std::string library(const Build& generated, const TargetDescription& target, const CompileSettings& settings) const;

 private:
  Target target_;
};

}  // namespace prism::backend
