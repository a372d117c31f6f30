#include "engine/search/kernel_cut.h"

#include <algorithm>
#include <optional>
#include <set>

#include "engine/search/dag.h"
#include "engine/search/library_cut.h"

namespace prism::search {

namespace {

bool is_layout_op(Op op) { return op == Op::Reshape || op == Op::Transpose; }
bool computed(const Value& v) { return v.op != Op::Input && v.op != Op::Const && !is_layout_op(v.op); }

// The values that read each value.
std::vector<std::vector<int>> users_of(const Program& p) {
  std::vector<std::vector<int>> users(p.values.size());
  for (const Value& v : p.values)
    for (int o : v.operands) users[size_t(o)].push_back(v.id);
  return users;
}

// One layout change of a computed value: where the cut puts the value, and what it copies.
struct Boundary {
  int value = -1;
  std::optional<LayoutCopy> copy;
  std::string text;
};

// The layout ops that follow computed value `v` through `first` (each the only reader of the one
// before), as a boundary: [transpose] reshape… [transpose], the last transpose left to the next
// piece as a view of its input (a transpose alone, no copy at all); or one reshape the program
// returns, which the graph's output is in place (no piece after it). None for another form, or
// another chain the program returns.
std::optional<Boundary> boundary(const Program& p, const std::vector<std::vector<int>>& users, int v, int first) {
  std::vector<int> chain = {first};
  while (users[size_t(chain.back())].size() == 1 && is_layout_op(p.value(users[size_t(chain.back())][0]).op))
    chain.push_back(users[size_t(chain.back())][0]);
  auto returned = [&](int c) { return std::find(p.outputs.begin(), p.outputs.end(), c) != p.outputs.end(); };
  if (chain.size() == 1 && p.value(first).op == Op::Reshape && returned(first) && users[size_t(first)].empty() &&
      p.value(v).op != Op::Input)
    return Boundary{v, LayoutCopy{v, first, {}, 0, {}}, "at " + p.value(v).name + " (returned reshaped in place)"};
  if (std::any_of(chain.begin(), chain.end(), returned)) return std::nullopt;
  size_t i = 0;
  Boundary b;
  b.value = v;
  std::vector<int> perm;
  if (p.value(chain[i]).op == Op::Transpose) perm = p.value(chain[i++]).attrs.perm;
  int reshaped = -1;
  while (i < chain.size() && p.value(chain[i]).op == Op::Reshape) reshaped = chain[i++];
  const bool read_transposed = i < chain.size() && p.value(chain[i]).op == Op::Transpose;
  if (read_transposed) ++i;
  if (i != chain.size()) return std::nullopt;
  if (reshaped < 0) {
    if (chain.size() != 1) return std::nullopt;  // two transposes and no reshape: not a form a view has
    b.text = "at " + p.value(v).name + " (read transposed)";
    return b;
  }
  b.copy = LayoutCopy{v, reshaped, perm, 0, {}};
  const std::string then = read_transposed ? ", read transposed)" : ")";
  b.text = "at " + p.value(v).name + " (" + (perm.empty() ? "reshaped in place" : "transposed, reshaped: a copy") + then;
  if (!perm.empty()) b.copy->written = "at " + p.value(v).name + " (written transposed, reshaped in place" + then;
  return b;
}

// Piece `number` of `p`: the values `outputs` need, those in `as_inputs` read as inputs named by
// cut_tensor.
Program piece_of(const Program& p, const std::vector<int>& outputs, const std::vector<int>& as_inputs, size_t number) {
  Program part = extract_program(p, outputs, as_inputs, p.name + "_piece" + std::to_string(number));
  std::set<std::string> cut_names;
  for (int a : as_inputs) cut_names.insert(p.value(a).name);
  for (int id : part.inputs) {
    std::string& name = part.values[size_t(id)].name;
    if (cut_names.count(name)) name = cut_tensor(name);
  }
  return part;
}

// The pieces of `p` cut at `values` (in program order), the copies after them. A piece reads the
// values cut before it as inputs named by cut_tensor.
KernelCut cut_at(const Program& p, const std::vector<int>& values, const std::vector<LayoutCopy>& copies) {
  KernelCut cut;
  cut.copies = copies;
  std::vector<int> as_inputs = values;
  for (const LayoutCopy& c : copies) as_inputs.push_back(c.to);
  auto piece = [&](const std::vector<int>& outputs, const std::vector<int>& inputs) {
    cut.pieces.push_back(piece_of(p, outputs, inputs, cut.pieces.size() + 1));
  };
  for (int v : values) {
    std::vector<int> others;
    for (int a : as_inputs)
      if (a != v) others.push_back(a);
    piece({v}, others);
    cut.computes.push_back(v);
  }
  // A program returning a reshape in place ends with the piece computing what it reshapes.
  if (std::none_of(copies.begin(), copies.end(), [&](const LayoutCopy& c) { return c.to == p.outputs.at(0); })) {
    piece(p.outputs, as_inputs);
    cut.computes.push_back(p.outputs.at(0));
  }
  return cut;
}

// Whether computing `v` takes a matmul (v's own included).
bool after_matmul(const Program& p, int v) {
  std::vector<int> stack = {v};
  std::set<int> seen;
  while (!stack.empty()) {
    const Value& x = p.value(stack.back());
    stack.pop_back();
    if (!seen.insert(x.id).second) continue;
    if (x.op == Op::Matmul) return true;
    stack.insert(stack.end(), x.operands.begin(), x.operands.end());
  }
  return false;
}

// Whether `m` is a matmul by a weight: a 2-D input, read in place.
bool by_weight(const Program& p, const Value& m) {
  if (m.op != Op::Matmul || m.operands.size() != 2) return false;
  const Value& w = p.value(m.operands[1]);
  return (w.op == Op::Input || input_view(p, w)) && w.type.shape.size() == 2;
}

// The optional cuts: before each matmul by a weight (a 2-D input, read in place) whose rows a
// matmul computed.
std::vector<KernelCut> chained_matmul_cuts(const Program& p) {
  std::vector<KernelCut> cuts;
  std::set<int> done;
  for (const Value& m : p.values) {
    if (!by_weight(p, m)) continue;
    const Value& a = p.value(m.operands[0]);
    if (!computed(a) || !after_matmul(p, a.id) || !done.insert(a.id).second) continue;
    KernelCut cut = cut_at(p, {a.id}, {});
    cut.places = {"at " + a.name + ", before the matmul at " + std::to_string(m.pos.begin.line) + ":" + std::to_string(m.pos.begin.col)};
    cuts.push_back(std::move(cut));
  }
  return cuts;
}

// The values where a program's blocks meet (docs/search.md, "Block cuts"): a residual stream,
// computed after a matmul, read by two or more values, the only computed value made so far that
// any later value reads, with a matmul by a weight after it. Of two such values with no matmul
// between them, the later one (the block before keeps its epilogue).
std::vector<int> block_boundaries(const Program& p, const std::vector<std::vector<int>>& users) {
  auto counted = [&](const Value& v) { return v.op != Op::Input && v.op != Op::Const && !input_view(p, v) && !users[size_t(v.id)].empty(); };
  std::vector<int> closes(p.values.size(), 0);  // [i] values last read by value i
  int open = 0, last_weight_matmul = -1;
  for (const Value& v : p.values) {
    if (by_weight(p, v)) last_weight_matmul = v.id;
    if (counted(v)) closes[size_t(*std::max_element(users[size_t(v.id)].begin(), users[size_t(v.id)].end()))]++;
  }
  std::vector<int> kept;
  bool matmul_since = false;
  for (const Value& v : p.values) {
    open -= closes[size_t(v.id)];
    if (v.op == Op::Matmul) matmul_since = true;
    if (!counted(v)) continue;
    ++open;
    const bool outputs = std::find(p.outputs.begin(), p.outputs.end(), v.id) != p.outputs.end();
    if (open != 1 || users[size_t(v.id)].size() < 2 || outputs || v.id >= last_weight_matmul || !after_matmul(p, v.id)) continue;
    if (matmul_since || kept.empty()) kept.push_back(v.id);
    else kept.back() = v.id;
    matmul_since = false;
  }
  return kept;
}

// The cut at every block boundary, where a program has two or more: each block is searched on
// its own, and the blocks alike are searched once (kernel_search.h).
std::optional<KernelCut> block_cut(const Program& p, const std::vector<std::vector<int>>& users) {
  const std::vector<int> boundaries = block_boundaries(p, users);
  if (boundaries.size() < 2) return std::nullopt;
  KernelCut cut = cut_at(p, boundaries, {});
  cut.required = cut.blocks = true;
  for (int b : boundaries) cut.places.push_back("at " + p.value(b).name + " (between blocks)");
  return cut;
}

// Whether `p` changes the layout of a computed value (a reshape or transpose of one), which no
// fused kernel does.
bool changes_layout(const Program& p) {
  return std::any_of(p.values.begin(), p.values.end(), [&](const Value& v) { return is_layout_op(v.op) && computed(p.value(v.operands.at(0))); });
}

// A program with several outputs, one piece per output (docs/search.md, "Kernel cuts", at its
// outputs): each the program's own computation of it, from the inputs and the outputs before it
// that it reads; each piece cuts its own layout changes. Required where the program changes a
// computed value's layout (as written it has no family); else a choice beside its own families.
// None where two outputs are one value or an output is an input.
std::optional<KernelCut> output_cut(const Program& p) {
  std::vector<int> outputs = p.outputs;
  std::sort(outputs.begin(), outputs.end());
  if (std::adjacent_find(outputs.begin(), outputs.end()) != outputs.end()) return std::nullopt;
  std::string names;
  for (int o : outputs) {
    const Op op = p.value(o).op;
    if (op == Op::Input || op == Op::Const) return std::nullopt;
    names += (names.empty() ? "" : ", ") + p.value(o).name;
  }
  // Parts of one split are one statement: a piece computes them all and returns its own.
  auto split_siblings = [&](int a, int b) {
    const Value &x = p.value(a), &y = p.value(b);
    return x.op == Op::Split && y.op == Op::Split && x.id - x.attrs.index == y.id - y.attrs.index;
  };
  KernelCut cut;
  for (int o : outputs) {
    std::vector<int> others;
    for (int a : outputs)
      if (a != o && !split_siblings(a, o)) others.push_back(a);
    cut.pieces.push_back(piece_of(p, {o}, others, cut.pieces.size() + 1));
    cut.computes.push_back(o);
  }
  cut.required = changes_layout(p);
  cut.outputs = true;
  cut.places = {"at each output (" + names + ")"};
  return cut;
}

}  // namespace

std::string cut_tensor(const std::string& value) { return "cut_" + value; }

std::string KernelCut::text(const std::vector<bool>& folded) const {
  std::vector<std::string> said = places;
  for (size_t i = 0; i < copies.size() && i < folded.size(); ++i)
    if (folded[i] && !copies[i].written.empty()) said.at(copies[i].place) = copies[i].written;
  std::string out;
  for (const std::string& s : said) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::vector<KernelCut> kernel_cuts(const Program& p) {
  if (p.outputs.size() > 1) {
    if (std::optional<KernelCut> cut = output_cut(p)) return {std::move(*cut)};
    return {};
  }
  const std::vector<std::vector<int>> users = users_of(p);
  std::vector<Boundary> found;
  for (const Value& l : p.values) {
    if (!is_layout_op(l.op)) continue;
    const Value& source = p.value(l.operands.at(0));
    // An input reshaped in a way no load's view reads (heads split from its rows) is read in place
    // as a cut value is; a transpose of one, or a reshape adding unit dims, is a view (dag.h).
    const bool reshaped_input = source.op == Op::Input && l.op == Op::Reshape && !input_view(p, l);
    if (!computed(source) && !reshaped_input) continue;
    std::optional<Boundary> b = boundary(p, users, source.id, l.id);
    if (!b) return {};  // a layout change no cut reads: the seed's reason stands
    found.push_back(std::move(*b));
  }
  if (found.empty()) {
    if (std::optional<KernelCut> blocks = block_cut(p, users)) return {std::move(*blocks)};
    return chained_matmul_cuts(p);
  }
  std::vector<int> values;
  std::vector<LayoutCopy> copies;
  std::vector<std::string> places;
  for (const Boundary& b : found) {
    const bool piece = p.value(b.value).op != Op::Input;  // no piece computes an input
    if (piece && std::find(values.begin(), values.end(), b.value) == values.end()) values.push_back(b.value);
    if (b.copy) {
      copies.push_back(*b.copy);
      copies.back().place = places.size();
    }
    places.push_back(b.text);
  }
  std::sort(values.begin(), values.end());
  KernelCut cut = cut_at(p, values, copies);
  cut.required = true;
  cut.places = std::move(places);
  return {std::move(cut)};
}

}  // namespace prism::search
