// Instantiation: concrete grid sizes and loop ranges for concrete tensor dims and a tile budget.
//
// An Instance is a concrete family member: every map concrete, every symbol (tensor dims, grid
// sizes, loop ranges) bound, every Divides/Equal constraint of the analysis true, every tile dim a
// positive integer, and every custom kernel's fast-memory footprint (validate.h: loads at their
// storage size, computed tiles and accumulators in f32, all tiles of a block at once) within the
// budget.
//
// Candidate values for a grid size or loop range are the values in a bounded window (powers of two
// by default) that divide every tensor dim the symbol divides; enumerate() tries their combinations.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/sgraph/validate.h"

namespace prism::sgraph {

// The fast memory one block's tiles may use: shared memory per block on a GPU, a cache budget on
// a CPU (backend::TargetDescription::tile_budget()).
struct TileBudget {
  int64_t fast_memory_bytes = 256 * 1024;
};

struct Instance {
  SGraph graph;          // concrete maps
  DimBindings bindings;  // tensor dims, grid sizes and loop ranges
  Analysis analysis;     // of graph
};

// `dims` binds the tensor dims, `sizes` the grid sizes and loop ranges (SGraph::parameters()).
// Throws Error{InvalidArgument} naming the first problem: an open map choice, an unbound or
// extra symbol, a structural error (validate.h), a constraint that fails ("g1=3 does not divide
// d=64 (kernel 0: …)"), or a kernel over the memory budget.
Instance instantiate(const SGraph& graph, const DimBindings& dims, const DimBindings& sizes, const TileBudget& budget);

// The first reason these bindings (tensor dims and sizes together) are not a valid instance of
// an analysed concrete graph, or none.
std::optional<std::string> check_bindings(const Analysis& analysis, const DimBindings& all, const TileBudget& budget);

struct CandidateOptions {
  int64_t max_value = 1024;   // the window is 1..max_value
  bool powers_of_two = true;  // else every integer in the window
};

// Per grid size / loop range: the window's values dividing every tensor dim it divides.
std::map<std::string, std::vector<int64_t>> candidate_values(const SGraph& graph, const DimBindings& dims,
                                                             const CandidateOptions& options = {});

// Every combination of candidate values that instantiates (at most `limit`), as size bindings.
std::vector<DimBindings> enumerate(const SGraph& graph, const DimBindings& dims, const TileBudget& budget,
                                   const CandidateOptions& options = {}, size_t limit = 4096);

// The hardware lower bound for a family (maps may be open only if they do not change tiles: the
// graph must be concrete): for each custom kernel, its footprint at the smallest admissible tiles
// (the minimum over the candidate values of its sizes). Returns one message per kernel that cannot
// fit whatever the sizes; empty when every kernel may fit.
std::vector<std::string> memory_lower_bound(const SGraph& graph, const DimBindings& dims, const TileBudget& budget,
                                            const CandidateOptions& options = {});

}  // namespace prism::sgraph
