// Families with a library kernel (docs/search.md, "Library kernels"): every cut of the program at
// a matmul by a weight (library_cut.h) has its prologue and epilogue searched on their own, as
// written (its seeds only) and with one library kernel fewer than the family may have (SwiGLU's
// up projection cut again in the epilogue of a cut at its gate projection); their first families,
// put around the vendor matmul (compose.h), are this search's families. Each part's proof is its own search's; substituting
// the parts back gives the program as written.
#pragma once
#include <string>
#include <vector>

#include "engine/cancel.h"
#include "engine/ir/program.h"
#include "engine/search/part_search.h"
#include "engine/search/search.h"
#include "engine/sgraph/sgraph.h"

namespace prism::search {

// Families per part that are composed (the tuner measures each composite's instantiations).
inline constexpr size_t kLibraryPartFamilies = 3;

// `limits` of the whole search; the parts share what is left of its budget by `deadline_s` (seconds
// from now). Throws Error{Cancelled}.
std::vector<ComposedFamily> library_families(const Program& program, const SearchLimits& limits, double deadline_s,
                                            const CancelToken* cancel);

}  // namespace prism::search
