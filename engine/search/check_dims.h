// The dims the search's checks run a program and its families at (docs/search.md, "Order of
// work"): distinct per dim, so that a map confusing two dims changes the result; divisible by
// every product of the check's grid sizes and loop range on one dim; and small, since every
// family is evaluated there, on several input sets.
#pragma once
#include <set>
#include <string>

#include "engine/ir/dim.h"
#include "engine/ir/program.h"

namespace prism::search {

// The dims that only index data in parallel: each sizes an axis of its own wherever it appears
// (a transpose moves it), never one that is reduced, contracted, split, joined or reshaped, nor a
// part of another dim (h in h*e). A family's grid cuts such a dim by one grid size at most, and no
// loop runs over it: attention's batch and heads.
std::set<std::string> parallel_dims(const Program& program);

// The numeric check's (verify.h; grid sizes 2 and 3, loop range 2): distinct multiples of 12
// (12, 24, 36, …), and odd multiples of 6 (6, 18, …) for the parallel dims.
DimBindings check_dims(const Program& program);

// The fingerprint's (fingerprint.h; grid sizes 2 and 4, loop range 3): distinct multiples of 12,
// and multiples of 4 that are none of 12 (4, 8, 16, …) for the parallel dims.
DimBindings fingerprint_dims(const Program& program);

}  // namespace prism::search
