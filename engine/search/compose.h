// Candidates with a library kernel (library_cut.h): the families found for a cut's prologue and
// epilogue put into one kernel graph around the vendor matmul.
#pragma once
#include "engine/ir/program.h"
#include "engine/search/library_cut.h"
#include "engine/sgraph/sgraph.h"

namespace prism::search {

// prologue's kernels (its output renamed to cut.left), the library matmul writing cut.product,
// then epilogue's kernels (its output is the graph's "O"); either part may be null when the cut
// has none. Each part's parameters and internal tensors are renamed apart. The graph reads the
// program's inputs, in parameter order.
sgraph::SGraph compose_library_graph(const Program& program, const LibraryCut& cut, const sgraph::SGraph* prologue,
                                     const sgraph::SGraph* epilogue);

}  // namespace prism::search
