// Families of a program cut into pieces (kernel_cut.h; docs/search.md, "Kernel cuts"): each
// piece is searched on its own, as written (its seeds), with one kernel cut fewer than the whole
// may have; the pieces' first families, run one after another with the layout copies between
// them (compose.h), are this search's families. Each piece's proof is its own search's;
// substituting the pieces back gives the program as written.
#pragma once
#include <vector>

#include "engine/cancel.h"
#include "engine/ir/program.h"
#include "engine/search/kernel_cut.h"
#include "engine/search/part_search.h"
#include "engine/search/search.h"

namespace prism::search {

// Composites per cut, at most: each piece keeps as many families as this allows (at least one).
inline constexpr size_t kKernelCutFamilies = 27;

// `limits` of the whole search (limits.kernel_cuts > 0); the pieces share what is left of its
// budget by `deadline_s` (seconds from now). Throws Error{Cancelled}.
std::vector<ComposedFamily> kernel_cut_families(const Program& program, const std::vector<KernelCut>& cuts, const SearchLimits& limits,
                                                double deadline_s, const CancelToken* cancel);

}  // namespace prism::search
