// Parallelization plans: how a fused computation (dag.h) becomes kernels with symbolic grids and
// loops, and the sGraph that results.
//
// Indices: the axes of the DAG's values are grouped into index classes (einsum-style): an
// elementwise op's axes are its operands' (where they are not broadcast), a matmul joins the
// contraction axes of its operands and passes rows, columns and batch axes through, a reduction
// passes the other axes through, a split or concat passes the axes other than its own through.
// A class is *reduced* when some op sums, maxes, rms'es or contracts over it, and *whole* when a
// split or concat moves data along it: every block then holds all of it (no grid dim, no loop). A plan picks up to two classes for grid dims and at most one reduced class
// for the loop; the maps of every load and save follow from the classes, so a grid dim cuts every
// axis of its class the same way and dims match by construction.
//
// Structural rules (a plan that breaks one is no family; counted as "structure"):
//   - the loop walks a reduced class; every reduction over it gets an accumulator right after it
//     (sum/matmul: sum_accumulate, max: max_accumulate, rms: rms_accumulate replacing it), and at
//     most `max_accumulators` of them; a value after the loop never meets a loop-body value, and
//     the output is saved only after the accumulators (never inside the loop);
//   - a grid dim on a reduced class is a cross-block reduction: at most one, over sums, matmuls
//     and maxes; the block partials are saved with a partial axis and a second kernel combines
//     them and computes everything downstream, which must read only those partials (so
//     max_kernels >= 2);
//   - online softmax: a max M over the loop's or the cross-block grid's class may be subtracted
//     in the body (exp(S - M), then products with plain values, sums of such terms) when every
//     such value ends in a sum or matmul over that class: each piece uses its own max, and the
//     sum rescales the pieces to the overall max (a rescaled_sum_accumulate over the loop; in
//     kernel 2, sum(P * exp(P_M - max(P_M))) over the partials). Sound for any per-piece max,
//     since every such value is exp(-M) times a value free of M;
//   - a grid dim on a class that is not reduced must reach the output (it lays out its tiles);
//   - a tensor has at most one axis in each grid or loop class.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "engine/search/dag.h"
#include "engine/search/search.h"
#include "engine/sgraph/sgraph.h"

namespace prism::search {

struct Indices {
  std::vector<std::vector<int>> of;  // [value][axis] -> class (-1: a size-1 axis)
  std::vector<Dim> size;             // per class
  std::vector<bool> reduced;         // per class
  std::vector<bool> whole;           // per class: never cut by a grid dim or the loop
  int count() const { return int(size.size()); }
  // The class an op reduces over (the contraction for matmul), or -1.
  int reduced_by(const Dag& dag, int value) const;
};
Indices analyze_indices(const Dag& dag);

struct Plan {
  std::vector<int> grid;  // classes, increasing (grid dims are unordered: symmetry breaking)
  int loop = -1;          // a reduced class, or -1
};
// Every plan for the DAG (grid sets of up to two classes, loop none or a reduced class; never a
// whole class).
std::vector<Plan> enumerate_plans(const Indices& indices);

// A data-parallel grid dim: it cuts the axis axis[v] of every DAG value v into `size` blocks in
// kernel 0 (its g<i>) and into `size2` blocks in the combining kernel, when there is one (-1: v
// has no axis in the dim's class and every block reads all of v).
struct GridCut {
  Dim size, size2;
  std::vector<int> axis;
};

struct Family {
  sgraph::SGraph graph;
  std::vector<Dim> split;  // [value] how many pieces the loop and the grid cut its reduction into (1: none)
  std::vector<GridCut> cuts;  // the data-parallel grid dims, in grid order
  std::vector<int> kernel;    // [value] the kernel computing it: 1 downstream of a cross-block reduction, else 0
  bool combining = false;     // a second kernel sums the block partials (and computes kernel-1 values)
  // Online softmax: [value] the cut max that v is computed relative to, piece by piece (x - max,
  // exp of it, linear ops on that), or -1; and the cut max whose pieces' partials a sum or matmul
  // rescales to the overall max when it combines them, or -1.
  std::vector<int> local, rescaled;
  std::string summary;
};

// The family for a plan, or the structural rule it breaks (`why`).
std::optional<Family> build_family(const Dag& dag, const Indices& indices, const Plan& plan, const Program& program,
                                   const SearchLimits& limits, std::string& why);

}  // namespace prism::search
