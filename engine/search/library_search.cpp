#include "engine/search/library_search.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/search/compose.h"
#include "engine/search/library_cut.h"

namespace prism::search {

namespace {

// A part's families (at most kLibraryPartFamilies, the search's stable order), or none found.
std::optional<SearchResult> search_part(const Program& part, const SearchLimits& limits, double budget_s, const CancelToken* cancel) {
  // A part is searched as written (its seeds), with no expression pruning: its families differ
  // by their grids and loops, which the plans enumerate; the saturation and the enumeration would
  // cost as much as the whole program's search again for op orders the tuner cannot tell apart.
  // A part may cut another of its matmuls (SwiGLU's up projection, in the epilogue of a cut at its
  // gate projection), while the family's count of library kernels allows.
  SearchLimits sub = limits;
  sub.library_kernels = limits.library_kernels - 1;
  sub.max_block_ops = 0;
  sub.prune = false;
  sub.budget_s = std::max(0.1, budget_s);
  SearchResult r = search_program(part, sub, cancel);
  if (r.candidates.empty()) return std::nullopt;
  // The most parallel first: fewest kernels, then the most grid dims (a family with no grid runs
  // in one block), in the search's order otherwise.
  auto grid_dims = [](const Candidate& c) {
    size_t n = 0;
    for (const sgraph::SGraph::Parameter& p : c.graph->parameter_roles()) n += p.role == sgraph::SGraph::Parameter::Role::Grid;
    return n;
  };
  std::stable_sort(r.candidates.begin(), r.candidates.end(), [&](const Candidate& a, const Candidate& b) {
    return a.kernels != b.kernels ? a.kernels < b.kernels : grid_dims(a) > grid_dims(b);
  });
  // And the first with a vendor matmul of its own, when none of those has one (it has more kernels).
  size_t keep = std::min(kLibraryPartFamilies, r.candidates.size());
  auto nested = std::find_if(r.candidates.begin(), r.candidates.end(), [](const Candidate& c) {
    return std::any_of(c.graph->kernels.begin(), c.graph->kernels.end(), [](const sgraph::Kernel& k) { return k.vendor_matmul(); });
  });
  if (nested != r.candidates.end() && size_t(nested - r.candidates.begin()) >= keep) std::iter_swap(r.candidates.begin() + keep++, nested);
  r.candidates.resize(keep);
  return r;
}

std::string indented(const std::string& text) {
  std::string out = "  ";
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

}  // namespace

std::vector<LibraryFamily> library_families(const Program& program, const SearchLimits& limits, double deadline_s,
                                            const CancelToken* cancel) {
  std::vector<LibraryFamily> out;
  if (limits.library_kernels <= 0) return out;
  const auto t0 = std::chrono::steady_clock::now();
  auto left = [&] { return deadline_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const std::vector<LibraryCut> cuts = library_cuts(program);
  for (size_t i = 0; i < cuts.size() && left() > 0; ++i) {
    const LibraryCut& cut = cuts[i];
    const double share = left() / double(cuts.size() - i) / ((cut.prologue && cut.epilogue) ? 2 : 1);
    std::optional<SearchResult> pro, epi;
    if (cut.prologue && !(pro = search_part(*cut.prologue, limits, share, cancel))) continue;
    if (cut.epilogue && !(epi = search_part(*cut.epilogue, limits, share, cancel))) continue;
    const size_t np = pro ? pro->candidates.size() : 1, ne = epi ? epi->candidates.size() : 1;
    for (size_t a = 0; a < np; ++a)
      for (size_t b = 0; b < ne; ++b) {
        const Candidate* p = pro ? &pro->candidates[a] : nullptr;
        const Candidate* e = epi ? &epi->candidates[b] : nullptr;
        LibraryFamily f;
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
