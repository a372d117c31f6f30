// Searching the parts of a cut program (a library cut's prologue and epilogue, library_search.h;
// a kernel cut's pieces, kernel_search.h) and what the composed families are.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include "engine/cancel.h"
#include "engine/ir/program.h"
#include "engine/search/search.h"
#include "engine/sgraph/sgraph.h"

namespace prism::search {

// A family made of the parts' families: the parts' own searches proved them.
struct ComposedFamily {
  sgraph::SGraph graph;
  std::string summary;  // "library matmul h = matmul(Y, W^T) at 4:7 (…) after …; then …"
  std::string proof;    // the parts' proofs and the substitution
};

// A part's first `keep` families (or up to 3 where keep is less), or none found. A part is
// searched as written (its seeds), with no expression pruning, under `sub` (the caller lowers its
// cut counts) and `budget_s`. Ranked most parallel first: fewest kernels, then the most grid
// dims, the search's order otherwise; kept: the first, then the first with a loop (online
// softmax's first), with a vendor matmul, with a second custom kernel, then the next in rank.
std::optional<SearchResult> search_part(const Program& part, SearchLimits sub, double budget_s, const CancelToken* cancel, size_t keep);

// `text` with every line indented by two spaces (a part's proof inside the whole's).
std::string indented(const std::string& text);

}  // namespace prism::search
