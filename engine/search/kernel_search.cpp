#include "engine/search/kernel_search.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "engine/ir/print.h"
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

// A piece as a computation: its text with its inputs named by first use and its other values by
// position, and its inputs' names in that order. Two pieces of one text are one program up to the
// names of their inputs (a chain's blocks alike), and one search serves both.
struct PieceForm {
  std::string text;
  std::vector<std::string> inputs;
};

PieceForm piece_form(Program piece) {
  PieceForm form;
  std::vector<int> order;
  for (const Value& v : piece.values)
    for (int o : v.operands)
      if (piece.value(o).op == Op::Input && std::find(order.begin(), order.end(), o) == order.end()) order.push_back(o);
  for (int id : piece.inputs)
    if (std::find(order.begin(), order.end(), id) == order.end()) order.push_back(id);
  for (size_t k = 0; k < order.size(); ++k) {
    Value& in = piece.values[size_t(order[k])];
    form.inputs.push_back(in.name);
    in.name = "in" + std::to_string(k);
  }
  for (Value& v : piece.values)
    if (v.op != Op::Input && !v.name.empty()) v.name = "v" + std::to_string(v.id);
  piece.inputs = order;
  piece.name = "piece";
  form.text = print_program(piece);
  return form;
}

// Piece j's inputs named as piece `like`'s are (both of one form): `like`'s names to j's.
std::map<std::string, std::string> renaming(const PieceForm& like, const PieceForm& j) {
  std::map<std::string, std::string> out;
  for (size_t k = 0; k < like.inputs.size(); ++k)
    if (like.inputs[k] != j.inputs[k]) out[like.inputs[k]] = j.inputs[k];
  return out;
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

// `like[j]`: the first piece of piece j's form (j where it is the first); `renames[j]` its inputs'
// names to piece j's.
ComposedFamily composed(const Program& program, const KernelCut& cut, const std::vector<const Candidate*>& parts,
                        const std::vector<size_t>& like, const std::vector<std::map<std::string, std::string>>& renames) {
  ComposedFamily f;
  std::vector<const sgraph::SGraph*> graphs;
  for (const Candidate* c : parts) graphs.push_back(c->graph.get());
  f.graph = compose_pieces(program, cut, graphs, renames);
  f.summary = std::to_string(parts.size()) + (parts.size() == 1 ? " piece cut " : " pieces cut ") + cut.text(folded_copies(program, cut, f.graph));
  // One clause per piece (its own clauses joined by dashes), so that a clause every family
  // shares, which `candidates` prints once, still says which piece it is.
  auto renamed_text = [&](size_t j) {
    std::string text;
    for (const auto& [from, to] : renames[j]) text += (text.empty() ? "" : ", ") + to + " for " + from;
    return text;
  };
  for (size_t j = 0; j < parts.size(); ++j) {
    if (like[j] != j) {
      f.summary += "; piece " + std::to_string(j + 1) + ": piece " + std::to_string(like[j] + 1) + "'s kernels, reading " + renamed_text(j);
      continue;
    }
    std::string piece = parts[j]->summary;
    for (size_t at = 0; (at = piece.find("; ", at)) != std::string::npos;) piece.replace(at, 2, " — ");
    f.summary += (j ? "; piece " : ": piece ") + std::to_string(j + 1) + ": " + piece;
  }
  f.proof = cut.outputs ? "Each output of the program is the piece that returns it, reading the outputs before it that it uses"
                        : "The program is its last piece with each value cut computed by the piece before it that returns it";
  if (!cut.copies.empty()) f.proof += " (each reshape as the program writes it: read in place, through a transpose the piece before it writes, or by a copy kernel through that transpose)";
  f.proof += "; each piece is the program's own computation of its value.\n";
  for (size_t j = 0; j < parts.size(); ++j)
    if (like[j] != j)
      f.proof += "Piece " + std::to_string(j + 1) + " (" + program.value(cut.computes[j]).name + ") is piece " + std::to_string(like[j] + 1) +
                 " with its inputs renamed (" + renamed_text(j) + "): piece " + std::to_string(like[j] + 1) + "'s proof, renamed.\n";
    else
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
  // Each cut's pieces by form: like[c][j], the first piece of piece j's form; only those are searched.
  std::vector<std::vector<PieceForm>> forms(cuts.size());
  std::vector<std::vector<size_t>> like(cuts.size()), searched(cuts.size());
  for (size_t c = 0; c < cuts.size(); ++c)
    for (size_t j = 0; j < cuts[c].pieces.size(); ++j) {
      forms[c].push_back(piece_form(cuts[c].pieces[j]));
      size_t first = 0;
      while (forms[c][first].text != forms[c][j].text) ++first;
      like[c].push_back(first);
      if (first == j) searched[c].push_back(j);
    }
  // Each search's share of what is left: the budget over the searches not yet made, this cut's
  // from its k-th on and every later cut's.
  auto searches_from = [&](size_t c, size_t k) {
    size_t n = searched[c].size() - k;
    for (size_t later = c + 1; later < cuts.size(); ++later) n += searched[later].size();
    return double(n);
  };
  SearchLimits sub = limits;
  sub.kernel_cuts = limits.kernel_cuts - 1;
  for (size_t c = 0; c < cuts.size(); ++c) {
    const KernelCut& cut = cuts[c];
    // Pieces of one form take the same family of it: the combinations are the searched pieces'.
    const size_t keep = families_per_piece(searched[c].size());
    std::vector<SearchResult> found;
    for (size_t k = 0; k < searched[c].size(); ++k) {
      if (left() <= 0) return out;
      std::optional<SearchResult> r = search_part(cut.pieces[searched[c][k]], sub, left() / searches_from(c, k), cancel, keep);
      if (!r) break;
      found.push_back(std::move(*r));
    }
    if (found.size() != searched[c].size()) continue;
    std::vector<std::map<std::string, std::string>> renames;
    for (size_t j = 0; j < cut.pieces.size(); ++j) renames.push_back(renaming(forms[c][like[c][j]], forms[c][j]));
    std::vector<size_t> result_of;  // [j] the search whose families piece j takes
    for (size_t j = 0; j < cut.pieces.size(); ++j)
      result_of.push_back(size_t(std::find(searched[c].begin(), searched[c].end(), like[c][j]) - searched[c].begin()));
    std::vector<size_t> at(found.size(), 0);
    do {
      std::vector<const Candidate*> parts;
      for (size_t j = 0; j < cut.pieces.size(); ++j) parts.push_back(&found[result_of[j]].candidates[at[result_of[j]]]);
      out.push_back(composed(program, cut, parts, like[c], renames));
    } while (next_combination(at, found));
  }
  return out;
}

}  // namespace prism::search
