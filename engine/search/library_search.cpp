#include "engine/search/library_search.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/search/compose.h"
#include "engine/search/library_cut.h"

namespace prism::search {

std::vector<ComposedFamily> library_families(const Program& program, const SearchLimits& limits, double deadline_s,
                                            const CancelToken* cancel) {
  std::vector<ComposedFamily> out;
  if (limits.library_kernels <= 0) return out;
  const auto t0 = std::chrono::steady_clock::now();
  auto left = [&] { return deadline_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const std::vector<LibraryCut> cuts = library_cuts(program);
  for (size_t i = 0; i < cuts.size() && left() > 0; ++i) {
    const LibraryCut& cut = cuts[i];
    const double share = left() / double(cuts.size() - i) / ((cut.prologue && cut.epilogue) ? 2 : 1);
    std::optional<SearchResult> pro, epi;
    // A part may cut another of its matmuls (SwiGLU's up projection, in the epilogue of a cut at
    // its gate projection), while the family's count of library kernels allows.
    SearchLimits sub = limits;
    sub.library_kernels = limits.library_kernels - 1;
    if (cut.prologue && !(pro = search_part(*cut.prologue, sub, share, cancel, kLibraryPartFamilies))) continue;
    if (cut.epilogue && !(epi = search_part(*cut.epilogue, sub, share, cancel, kLibraryPartFamilies))) continue;
    const size_t np = pro ? pro->candidates.size() : 1, ne = epi ? epi->candidates.size() : 1;
    for (size_t a = 0; a < np; ++a)
      for (size_t b = 0; b < ne; ++b) {
        const Candidate* p = pro ? &pro->candidates[a] : nullptr;
        const Candidate* e = epi ? &epi->candidates[b] : nullptr;
        ComposedFamily f;
        f.graph = compose_library_graph(program, cut, p ? p->graph.get() : nullptr, e ? e->graph.get() : nullptr);
        // The backend decides at code generation: OpenBLAS sgemm or cuBLAS where the dtypes allow,
        // else its own matmul kernel (16-bit operands on the CPU).
        f.summary = "library matmul " + cut.text + " (vendor BLAS where its dtypes allow)";
        if (p) f.summary += " after " + p->summary;
        if (e) f.summary += "; then " + e->summary;
        f.proof = "The program is the epilogue with " + cut.product + " = matmul(" + cut.left + ", " + cut.right +
                  (cut.right_view.empty() ? "" : " viewed " + sgraph::view_text(cut.right_view)) + ")" +
                  (p ? ", " + cut.left + " the prologue's output" : "") + " (a library kernel computes the matmul).\n";
        if (p) f.proof += "Prologue (" + cut.left + "), proved:\n" + indented(p->proof) + "\n";
        if (e) f.proof += "Epilogue (from " + cut.product + "), proved:\n" + indented(e->proof) + "\n";
        out.push_back(std::move(f));
      }
  }
  return out;
}

}  // namespace prism::search
