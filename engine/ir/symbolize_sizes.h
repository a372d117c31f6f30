// A program with fixed sizes (an imported module's widths: x[n, 1024] against W[2816, 1024]) as one
// whose fixed sizes are dims, for the search (docs/search.md, "Fixed sizes"). The search checks
// every family numerically at small dims; at a model's widths one check evaluates megabytes of
// weights, and a search of a Llama MLP block took 89 s where the same program with named widths
// takes under one.
//
//   - every integer size of 2 or more on an input's axis becomes the dim `__s<size>` (equal sizes
//     one dim), in each value's type wherever the type has exactly that size;
//   - except a size that a reshape's operand or result, or a split or concat, has on any axis:
//     their element counts and pieces tie sizes together (a head's [n, 64] as [n, 4, 16]);
//   - constants stay as they are: a mean over a fixed axis still divides by the number, so the
//     program computes the same at the binding `__s<size>` = size, and a family proved equal to
//     it for every binding is equal to the program.
#pragma once
#include <map>
#include <string>

#include "engine/ir/program.h"

namespace prism {

struct SymbolizedSizes {
  Program program;
  std::map<std::string, int64_t> sizes;  // dim -> the size it stands for; empty: the program as given
};

// `lowered`: a program with primitives only (lower_composites).
SymbolizedSizes symbolize_sizes(const Program& lowered);

// `text` with every dim of `sizes` written as its number (a family's summary or proof; a name an
// elided term cut short keeps its digits).
std::string with_sizes(std::string text, const std::map<std::string, int64_t>& sizes);

}  // namespace prism
