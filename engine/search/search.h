// The symbolic search (docs/design.md §3, §4): generate families of fused kernels (sGraphs) for a
// program, prune them by abstract expressions, dimensions, structure and hardware bounds, and
// report only the families an e-graph proof shows equal to the program.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/sgraph/sgraph.h"

namespace prism {

inline constexpr int64_t kGpuSharedBytes = 48 * 1024;        // shared memory per block, by default
inline constexpr int64_t kGpuOptInSharedBytes = 228 * 1024;  // the most a Hopper block may opt in to

struct SearchLimits {
  int max_block_ops = 8;        // compute ops of the fused computation (loads, saves and the
                                // accumulators the loop adds are not counted); 0: the seeds only
                                // (the program as written, and with row scales deferred)
  int max_kernels = 3;           // a family's vendor matmuls count as one. Fused plans make at most
                                // two (a cross-block reduction's second kernel); 3 admits a
                                // prologue, a vendor matmul and an epilogue: an RMSNorm's rows
                                // before the library's Y @ Wu, then a fused Y @ Wg * t
                                // (docs/search.md, "Library kernels")
  int max_accumulators = 3;     // accumulators per custom kernel
  int library_kernels = 2;      // vendor matmuls (library kernels) per family beside fused kernels: 0 to 3
                                // (library_search.h). 2: a gated MLP's two projections, each a
                                // vendor matmul, beside one fused kernel (docs/search.md, "Library
                                // kernels")
  int kernel_cuts = 2;          // how deep a program is cut into pieces searched on their own: at
                                // its layout changes, before a matmul chained through a weight
                                // (kernel_cut.h); each piece may cut one level fewer. 0: none
  int threads = 0;              // 0: all hardware threads
  double budget_s = 10.0;       // wall-clock budget; the stop reason says when it was hit
  bool prune = true;            // false: no expression or hardware pruning (exhaustive; for the
                                // soundness test). Dims and structure define the space: always on.
  // Hardware lower bounds: with `bindings` (representative dims), a family whose smallest tiles
  // need more than `fast_memory_bytes` per block is dropped. Empty bindings: no hardware pruning
  // (shape-generic). The default is a GPU block's default shared memory; a GPU block may opt in to
  // kGpuOptInSharedBytes, and a CPU's budget is a share of its L2 (TargetDescription).
  int64_t fast_memory_bytes = kGpuSharedBytes;
  std::map<std::string, int64_t> bindings;
  bool operator==(const SearchLimits&) const = default;
};

// Why a search stopped: it enumerated all its limits allow, or its time budget ran out first (its
// results are partial).
enum class SearchStop { Complete, Budget };
// "complete", "budget": the protocol's stopReason.
const char* search_stop_name(SearchStop stop);

struct SearchStats {
  uint64_t generated = 0, pruned_expression = 0, pruned_dims = 0, pruned_structure = 0,
           pruned_hardware = 0, duplicates = 0, verified = 0, rejected = 0, unproved = 0;
  uint64_t families = 0;        // complete sGraphs built from finished computations and plans
  uint64_t fingerprinted = 0;         // families the finite-field fingerprint could judge (fingerprint.h)
  uint64_t fingerprint_rejected = 0;  // of those, rejected by it (counted in rejected too)
  double fingerprint_s = 0;           // worker time in the fingerprint, summed over threads (in verify_s)
  double saturate_s = 0;        // saturating the program's e-graph (once)
  double generate_s = 0;        // wall time of the enumeration (verification runs inside it)
  double verify_s = 0;          // worker time in verification, summed over threads
  double total_s = 0;
  SearchStop stop_reason = SearchStop::Complete;
  // With no candidate: which stage removed the last family, its first concrete reason, and the
  // limit to raise when a limit was the cause. Empty when something was found.
  std::string empty_reason;
  bool from_store = false;      // read back from the search store (search_store.h): the counts and
                                // times are those of the search that stored it
};

struct SearchProgress {
  // pruned: all four reasons together
  uint64_t generated = 0, pruned = 0, verified = 0;
  double elapsed_s = 0;
};

struct Candidate {
  int id = 0;                            // 1-based, stable order: by kernel count, then canonical text
  int kernels = 0;                       // that run (sgraph::kernels_run)
  std::shared_ptr<const sgraph::SGraph> graph;  // the family, in canonical form; shared and immutable,
                                                // from the search to tuning and code generation
  std::string summary;                   // one line, e.g. "1 custom kernel: matmul+rms accumulated over F1, div after"
  std::vector<std::string> parameters;   // symbolic parameters: "g1", "F1", ...
  bool verified = true;                  // always true for reported candidates
  std::string proof;                     // the e-graph explanation (printable)
  uint64_t hash = 0;                     // canonical hash

  std::string text() const;              // the sGraph text form, for people and clients (sgraph/print.h)
};

struct SearchResult {
  std::string program;
  int64_t version = 0;                   // the document version it was searched at
  SearchLimits limits;
  SearchStats stats;
  std::vector<Candidate> candidates;
};

struct Program;
class CancelToken;
namespace pipeline {
class Dump;
}

namespace search {
// The whole search for one lowered single-output program (Workspace::search calls it without
// holding the workspace mutex). Throws Error{Cancelled}, Error{InvalidArgument} (a program the
// e-graph terms cannot express, a fast-memory budget that is not positive).
// `dump`: what the search's passes leave, for the one it asks for (pipeline.h).
SearchResult search_program(const Program& lowered, const SearchLimits& limits, const CancelToken* cancel = nullptr,
                            const std::function<void(const SearchProgress&)>& progress = {}, pipeline::Dump* dump = nullptr);
// The memory a search of `lowered` takes at most, estimated from its tensors at the checks' dims
// (literal dims count as they are): Workspace::search refuses one over its budget up front.
int64_t search_memory_bytes(const Program& lowered);
}  // namespace search

}  // namespace prism
