// Targets: the kinds of machine prism generates kernels for, and what the cost model and the
// roofline know about one machine (a TargetDescription). A target is parsed once, where a person
// or a client names it (the protocol, the REPL's commands, a benchmark's arguments:
// tune::parse_target), and is a typed value everywhere in the engine. The CPU is described from this machine (cpu/describe.h),
// a GPU from its driver and data sheet (cuda/describe.h).
#pragma once
#include <algorithm>
#include <any>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/error.h"
#include "engine/sgraph/instantiate.h"

namespace prism::backend {

// A kind of machine: one registered backend's place in the registry (tune/backends.h), in the
// order of registration. Target{} is the first built-in backend's, the CPU's, and what a request
// that names no target runs on; a backend's own folder names its built-in place (cpu::kTarget),
// a backend registered at run time is given the next one. Named as people name it by
// tune::target_name, parsed by tune::parse_target.
enum class Target : int {};

struct TargetDescription {
  Target target{};
  std::string model;                   // e.g. "AMD EPYC, 2 cores, AVX-512"
  std::string toolchain;               // what builds and runs its kernels: the host compiler's
                                       // version, or the NVRTC and driver versions
  int cores = 1;                       // CPU cores, or a GPU's SMs: the units blocks are spread over
  int64_t l1_bytes = 0, l2_bytes = 0;  // per core
  int64_t l3_bytes = 0;                // total
  double bandwidth_gbs = 0;            // streaming-read bandwidth from memory, all cores (measured on the CPU)
  double cache_bandwidth_gbs = 0;      // the same for a working set that stays in the last-level cache
                                       // (0: unknown, use bandwidth_gbs)
  double peak_gflops = 0;              // f32 FMA peak, all cores (measured on the CPU)
  int64_t fast_memory_bytes = 0;       // per-block tile budget (sgraph::TileBudget): shared memory per
                                       // block on a GPU, a cache budget on a CPU
  int64_t spill_tile_bytes = 0;        // where no family's tiles fit fast_memory_bytes at a call's sizes,
                                       // the most they may take instead (0: none, as shared memory is a
                                       // hard limit); docs/tuning.md, "Tiles past the budget"
  bool measured = false;               // bandwidth/peak measured here (false: data sheet values)
  // What only this target's backend reads (a CPU's vector width and 16-bit units, a GPU's
  // architecture and tensor cores), as that backend's own type: cpu/cpu_features.h,
  // cuda/gpu_features.h. Empty: the backend's defaults. Nothing outside the backend looks inside.
  std::any features;
  sgraph::TileBudget tile_budget() const { return {fast_memory_bytes}; }
  sgraph::TileBudget spill_budget() const { return {std::max(fast_memory_bytes, spill_tile_bytes)}; }
  // Bytes the caches can hold between two calls of a kernel: the last level plus every core's
  // second level (on CPUs whose last level is a victim cache, as AMD's, they add up).
  double cache_capacity() const { return double(l3_bytes) + double(l2_bytes) * double(cores); }
  // Streaming-read bandwidth measured at working-set sizes from the caches' to memory's, as
  // (bytes, GB/s) ascending in bytes and never rising (CPU; empty when not measured). A set near
  // the last level's size does not stay in it: other data and the replacement policy evict part
  // of every pass (docs/tuning.md, "The flow of one `tune`", step 1).
  std::vector<std::pair<double, double>> read_curve;
  // The read bandwidth for a working set of `bytes` read again and again (a timing loop, a layer
  // run many times): read_curve interpolated (in time per byte), the caches' bandwidth below it,
  // memory's above it. Without a curve: the caches' bandwidth up to half the last level plus the
  // second levels, memory's from cache_capacity() on, a mix of the two in between.
  double bandwidth_for(double bytes) const;
  // The fraction of such a working set the caches serve, consistent with bandwidth_for: 1 when it
  // reads at the caches' bandwidth, 0 at memory's.
  double cache_hit_fraction(double bytes) const;
};

// Features as backends write them (Backend::features_text): "key=value" words, and back. Throws
// Error{InvalidArgument} for a word without "=".
std::string feature_words(const std::vector<std::pair<std::string, std::string>>& words);
std::vector<std::pair<std::string, std::string>> parse_feature_words(std::string_view text);
// A number as feature words and the measurement files write it (at most 10 significant digits),
// and back (throws Error{InvalidArgument} naming `what` for text that is not one).
std::string number_text(double value);
double parse_number(std::string_view text, const std::string& what);

// `target`'s features as the backend's type F, the backend's defaults when it has none, for the
// backends' accessors (cpu/cpu_features.h); throws Error{InvalidArgument} when they are another
// backend's (`kind`: what F describes, "CPU").
template <typename F>
const F& features_of(const TargetDescription& target, const char* kind) {
  static const F kDefaults;
  if (!target.features.has_value()) return kDefaults;
  if (const F* f = std::any_cast<F>(&target.features)) return *f;
  throw Error(Error::Kind::InvalidArgument, std::string("this target description has no ") + kind + " features: it is another backend's");
}

// The same to set, added to `target` when it has none.
template <typename F>
F& features_of(TargetDescription& target, const char* kind) {
  if (!target.features.has_value()) target.features = F{};
  if (F* f = std::any_cast<F>(&target.features)) return *f;
  throw Error(Error::Kind::InvalidArgument, std::string("this target description has no ") + kind + " features: it is another backend's");
}

}  // namespace prism::backend
