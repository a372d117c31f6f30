// Moves a reshape across the transpose beside it where that shortens a chain of layout ops on a
// value to a form kernel cuts read (docs/search.md, "Kernel cuts"). reshape(transpose(reshape(x)))
// becomes
//
//   transpose(reshape(x))  where the outer reshape regroups axes the transpose keeps in order
//                          (grouped attention's values: rows [s, k·e] as heads [k, s, e], then
//                          [k, 1, s, e] beside the queries' [k, g, s, e]), or
//   reshape(transpose(x))  where the inner reshape's groups stay together and in order under the
//                          transpose (grouped attention's output [k, g, s, e] merged to heads
//                          [h, s, e], moved to [s, h, e], merged to rows [s, h·e]).
//
// Two reshapes in a row are one. A group is a run of axes of one shape holding the same elements
// as a run of the other (equal products). The result computes exactly what the program does,
// element for element.
#pragma once
#include "engine/ir/program.h"

namespace prism {

// `lowered`: a program with primitives only (lower_composites).
Program regroup_layouts(const Program& lowered);

}  // namespace prism
