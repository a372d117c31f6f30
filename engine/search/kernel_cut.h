// A program cut into pieces that run one after another, each searched as a program of its own
// (docs/search.md, "Kernel cuts"):
//
//   - where the program changes the layout of a computed value (attention's heads: a reshape of a
//     projection, a transpose of the heads' output), which no fused kernel does: the value is a
//     piece's output, and the next piece reads it through the layout change. A transpose that
//     the next piece can read as a view of its input is that view (no copy); a reshape is a
//     library reshape kernel, read in place where no transpose comes before it (no copy:
//     sgraph::reshapes_in_place), else a copy through that transpose;
//   - where a matmul by a weight reads rows that another matmul computed (an MLP's hidden rows
//     before its down projection): the two contract different axes, and a piece each lets each
//     split its own. This cut is a choice: the program's own families are searched too.
//
// Each piece computes a value of the program from the program's inputs and the values of the
// pieces (and copies) before it, exactly as the program does: substituting them back gives the
// program as written, so a family of each piece, proved on its own, makes a family of the whole.
#pragma once
#include <string>
#include <vector>

#include "engine/ir/program.h"

namespace prism::search {

// A layout change between pieces: program value `to` = reshape(`from` read through `view`), `to`'s
// shape (view: a permutation, a copy; or empty, read in place).
struct LayoutCopy {
  int from = -1, to = -1;
  std::vector<int> view;
  size_t place = 0;     // its entry in KernelCut::places
  std::string written;  // that entry where the piece before writes `from` transposed instead
                        // (compose_pieces folds a copy with a view into its save), else empty
};

struct KernelCut {
  std::vector<Program> pieces;     // in run order; the last returns the program's output (each
                                   // piece its own where the cut is at the outputs)
  std::vector<int> computes;       // [piece] the program value it computes
  std::vector<LayoutCopy> copies;  // each after the piece computing its `from`
  bool required = false;           // at layout changes: the program as written has no fused family;
                                   // at block boundaries: the whole is searched block by block
  bool blocks = false;             // at block boundaries (a residual stream between blocks)
  bool outputs = false;            // at a program's several outputs: piece j computes output
                                   // computes[j], and no piece returns the others
  std::vector<std::string> places;  // where it cuts, each: "at t3 (reshaped in place, read transposed)"

  // The places, joined: "at t3 (…), at A (transposed, reshaped: a copy)"; copy i with folded[i]
  // said as its `written` entry.
  std::string text(const std::vector<bool>& folded = {}) const;
};

// The device tensor, and the piece's input, that holds a value cut: "cut_" and its name (apart
// from the graph's output "O", whatever the program calls its values).
std::string cut_tensor(const std::string& value);

// The cut every layout change of a computed value needs (required), when the program has one and
// each fits the forms above; else, for a program of three or more blocks (each a matmul by a
// weight and what follows it up to a residual stream that all later values read the earlier ones
// through), the cut at every boundary between them (required: the search's time grows with the
// blocks, not exponentially); else the optional cuts at matmuls chained through a weight, one per
// such matmul. For a program with several outputs, one piece per output (required where it
// changes a computed value's layout, else a choice).
std::vector<KernelCut> kernel_cuts(const Program& program);

}  // namespace prism::search
