// Structural analysis of an sGraph: the type of every device tensor and tile, the loop role of
// every tile, the size constraints that are left for instantiation, and precise error messages for
// everything that makes a family invalid whatever its sizes are.
//
// Checked here (each failure is one message naming the kernel, the op and the dims):
//   - names: every tensor read is an input or written by an earlier kernel; each is written once;
//     graph outputs exist and carry no partial axis of a cross-block reduction that no later kernel
//     reduced (library reductions over axis 0 combine them; a custom kernel that reads a partial
//     tensor is trusted to combine it);
//   - maps: one entry per grid dim; entries name existing data dims; a data dim is partitioned by
//     at most one grid dim; the loop walks a dim only in a kernel with a loop;
//   - sizes: tile dims d/(g*F) must divide: decided now when the quotient is a number, otherwise
//     recorded as a Divides constraint; operand dims that must agree (matmul inner dims, broadcast
//     dims) are recorded as Equal constraints when they are not provably equal or different;
//   - the loop: each tile has a loop role (invariant, walks tile axis a, partial, mixed, after the
//     loop). A value after the loop (from an accumulator) cannot meet a loop-body value; an
//     accumulator folds a loop-body value in a kernel with a loop; a save inside the loop writes
//     each iteration's tile at the place its map's loop entry says, and a partial (the loop walks a
//     reduction: a matmul's contraction or a reduced axis) is saved only after an accumulator.
// Maps with open choice variables get no tile shapes; the checks that need them are skipped.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/sgraph/sgraph.h"

namespace prism::sgraph {

struct Constraint {
  enum class Kind { Divides, Equal };
  Kind kind = Kind::Divides;
  Dim a, b;           // Divides: b divides a; Equal: a == b
  std::string where;  // "kernel 0: load 'w' of W, dim 1"
  std::string str() const;  // "g1 divides d (kernel 0: load 'w' of W, dim 1)"
};

enum class LoopRole {
  Unknown,    // depends on an open map choice
  Invariant,  // the same in every loop iteration (before the loop)
  Walks,      // one slice per iteration along tile axis `loop_axis`
  Partial,    // per-iteration partial result of a reduction the loop walks
  Mixed,      // mixes iterations in another way
  After,      // computed from an accumulator, after the loop
};
const char* role_name(LoopRole role);

struct TileInfo {
  std::optional<Type> type;  // none when unknown (open map, or an error upstream)
  LoopRole role = LoopRole::Unknown;
  int loop_axis = -1;        // for Walks
  std::vector<bool> cut;     // per tile axis: a grid dim splits it across blocks (no block holds it whole)
};

struct Analysis {
  std::map<std::string, Type> tensors;        // every device tensor whose type is known
  std::set<std::string> unknown;              // device tensors written, type unknown (open map, error)
  std::map<std::string, int> partial_axes;    // device tensors with leading partial axes: how many
  std::vector<std::vector<TileInfo>> tiles;   // [kernel][op]; a Save's entry is the saved tensor
  std::vector<std::optional<Dim>> footprint;  // [kernel] fast-memory bytes per block (custom kernels)
  std::vector<Constraint> constraints;
  std::vector<std::string> errors;
  bool ok() const { return errors.empty(); }
};

Analysis analyze(const SGraph& graph);
std::vector<std::string> validate(const SGraph& graph);  // analyze(graph).errors

// Bytes a tile of this type takes in fast memory: loads keep their tensor's storage type, every
// computed tile and accumulator is f32.
int64_t element_bytes(DType dtype);

// A reshape kernel that reads its input as it lies (no view, no partial axes) into a tensor of the
// same dtype: the same elements in the same row-major order, so lowering reads the input's buffer
// at the new shape and the kernel copies nothing (docs/sgraph.md, "Reshapes in place"). Where the
// graph returns it, its input is a tensor a kernel writes (neither the graph's input nor another
// output), which lowering writes into the output's buffer instead.
bool reshapes_in_place(const SGraph& graph, const Analysis& analysis, const LibraryKernel& lib);
// The kernels that run: all but the reshapes read in place.
int kernels_run(const SGraph& graph);

}  // namespace prism::sgraph
