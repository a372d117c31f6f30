// The canonical form of an sGraph: two families that differ only in the names of their values,
// intermediate tensors, grid sizes, loop ranges and choice variables, or in the order of
// independent ops and kernels, get the same canonical text and hash.
//
//   - Each block op gets a structural key: its kind, op, attributes, map (grid dims by position,
//     choice variables as "?"), and its operands' keys; a load's key includes its tensor's key (a
//     graph input's name, or the structural key of the kernel and save that wrote it).
//   - Ops are put in the topological order that always takes the ready op with the smallest
//     (kind, key), loads first and saves last; kernels likewise, by a key over their grid and
//     their ordered ops.
//   - Names are then given in that order: block values t1, t2, … (per kernel); intermediate device
//     tensors T1, T2, …; grid sizes g1, g2, … and loop ranges F1, F2, … across the graph; choice
//     variables ?c1, ?c2, …. Graph inputs and outputs keep their names (they are the interface);
//     a name that a tensor dim already uses is skipped. Axes are written as non-negative numbers
//     where the rank is known.
// Grid sizes that are expressions rather than one symbol keep their spelling.
#pragma once
#include <cstdint>
#include <string>

#include "engine/sgraph/sgraph.h"
#include "engine/util/hash.h"

namespace prism::sgraph {

SGraph canonicalize(const SGraph& graph);
std::string canonical_text(const SGraph& graph);  // print(canonicalize(graph))
uint64_t canonical_hash(const SGraph& graph);     // FNV-1a 64 of canonical_text
using prism::fnv1a64;  // engine/util/hash.h

}  // namespace prism::sgraph
