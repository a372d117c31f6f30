#include "engine/search/kernel_search.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/search/compose.h"

namespace prism::search {

namespace {

// How many families each of `pieces` keeps: the most with keep^pieces <= kKernelCutFamilies.
size_t families_per_piece(size_t pieces) {
  size_t keep = 1;
  auto power = [&](size_t k) {
    size_t p = 1;
    for (size_t i = 0; i < pieces && p <= kKernelCutFamilies; ++i) p *= k;
    return p;
  };
  while (power(keep + 1) <= kKernelCutFamilies) ++keep;
  return keep;
}

// Advances `at` to the next combination of found[j].candidates (an odometer); false after the last.
bool next_combination(std::vector<size_t>& at, const std::vector<SearchResult>& found) {
  for (size_t j = at.size(); j-- > 0;) {
    if (++at[j] < found[j].candidates.size()) return true;
    at[j] = 0;
  }
  return false;
}

// Which of the cut's copies `graph` reads in place (compose_pieces folded a copy through a
// transpose into its piece's save).
std::vector<bool> folded_copies(const Program& program, const KernelCut& cut, const sgraph::SGraph& graph) {
  std::vector<bool> folded;
  for (const LayoutCopy& c : cut.copies) {
    const std::string to = cut_tensor(program.value(c.to).name);
    folded.push_back(std::any_of(graph.kernels.begin(), graph.kernels.end(),
                                 [&](const sgraph::Kernel& k) { return !k.custom && k.library.output == to && k.library.view(0).empty(); }));
  }
  return folded;
}

ComposedFamily composed(const Program& program, const KernelCut& cut, const std::vector<const Candidate*>& parts) {
  ComposedFamily f;
  std::vector<const sgraph::SGraph*> graphs;
  for (const Candidate* c : parts) graphs.push_back(c->graph.get());
  f.graph = compose_pieces(program, cut, graphs);
  f.summary = std::to_string(parts.size()) + " pieces cut " + cut.text(folded_copies(program, cut, f.graph));
  // One clause per piece (its own clauses joined by dashes), so that a clause every family
  // shares, which `candidates` prints once, still says which piece it is.
  for (size_t j = 0; j < parts.size(); ++j) {
    std::string piece = parts[j]->summary;
    for (size_t at = 0; (at = piece.find("; ", at)) != std::string::npos;) piece.replace(at, 2, " — ");
    f.summary += (j ? "; piece " : ": piece ") + std::to_string(j + 1) + ": " + piece;
  }
  f.proof = "The program is its last piece with each value cut computed by the piece before it that returns it";
  if (!cut.copies.empty()) f.proof += " (each reshape as the program writes it: read in place, through a transpose the piece before it writes, or by a copy kernel through that transpose)";
  f.proof += "; each piece is the program's own computation of its value.\n";
  for (size_t j = 0; j < parts.size(); ++j)
    f.proof += "Piece " + std::to_string(j + 1) + " (" + program.value(cut.computes[j]).name + "), proved:\n" + indented(parts[j]->proof) + "\n";
  return f;
}

}  // namespace

std::vector<ComposedFamily> kernel_cut_families(const Program& program, const std::vector<KernelCut>& cuts, const SearchLimits& limits,
                                                double deadline_s, const CancelToken* cancel) {
  std::vector<ComposedFamily> out;
  if (limits.kernel_cuts <= 0) return out;
  const auto t0 = std::chrono::steady_clock::now();
  auto left = [&] { return deadline_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  // Each piece's share of what is left: the budget over the pieces not yet searched, this cut's
  // from piece j on and every later cut's.
  auto pieces_from = [&](size_t c, size_t j) {
    size_t n = cuts[c].pieces.size() - j;
    for (size_t later = c + 1; later < cuts.size(); ++later) n += cuts[later].pieces.size();
    return double(n);
  };
  SearchLimits sub = limits;
  sub.kernel_cuts = limits.kernel_cuts - 1;
  for (size_t c = 0; c < cuts.size(); ++c) {
    const KernelCut& cut = cuts[c];
    const size_t keep = families_per_piece(cut.pieces.size());
    std::vector<SearchResult> found;
    for (size_t j = 0; j < cut.pieces.size(); ++j) {
      if (left() <= 0) return out;
      std::optional<SearchResult> r = search_part(cut.pieces[j], sub, left() / pieces_from(c, j), cancel, keep);
      if (!r) break;
      found.push_back(std::move(*r));
    }
    if (found.size() != cut.pieces.size()) continue;
    std::vector<size_t> at(found.size(), 0);
    do {
      std::vector<const Candidate*> parts;
      for (size_t j = 0; j < found.size(); ++j) parts.push_back(&found[j].candidates[at[j]]);
      out.push_back(composed(program, cut, parts));
    } while (next_combination(at, found));
  }
  return out;
}

}  // namespace prism::search
