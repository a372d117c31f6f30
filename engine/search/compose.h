// Candidates with a library kernel (library_cut.h): the families found for a cut's prologue and
// epilogue put into one kernel graph around the vendor matmul.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/ir/program.h"
#include "engine/search/kernel_cut.h"
#include "engine/search/library_cut.h"
#include "engine/sgraph/sgraph.h"

namespace prism::search {

// prologue's kernels (its output renamed to cut.left), the library matmul writing cut.product,
// then epilogue's kernels (its output is the graph's "O"); either part may be null when the cut
// has none. Each part's parameters and internal tensors are renamed apart. The graph reads the
// program's inputs, in parameter order.
sgraph::SGraph compose_library_graph(const Program& program, const LibraryCut& cut, const sgraph::SGraph* prologue,
                                     const sgraph::SGraph* epilogue);

// The pieces' kernels (pieces[j]: a family of cut.pieces[j]) in run order, each piece's output
// renamed to its cut tensor (the last piece's to the graph's "O"; cut at several outputs, each
// piece's to its output's O1, O2 …, which later pieces read), each layout copy a library
// reshape after the piece it reads. A copy through a transpose of a value one custom kernel of
// its piece saves whole is folded into that save (a save through a view: the piece writes the
// value transposed), and the reshape reads it in place. Each piece's parameters and internal tensors are renamed
// apart (p1_, p2_, …). The graph reads the program's inputs, in parameter order. `inputs[j]`,
// where given, renames piece j's inputs (a family found for another piece alike, kernel_search.h).
sgraph::SGraph compose_pieces(const Program& program, const KernelCut& cut, const std::vector<const sgraph::SGraph*>& pieces,
                              const std::vector<std::map<std::string, std::string>>& inputs = {});

}  // namespace prism::search
