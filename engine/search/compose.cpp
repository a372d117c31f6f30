#include "engine/search/compose.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/search/dag.h"

namespace prism::search {

namespace {

// A part's kernels with its grid sizes and loop ranges prefixed (g1 -> pro_g1) and every device
// tensor that is not a graph input renamed by `tensors` or prefixed.
std::vector<sgraph::Kernel> renamed(const sgraph::SGraph& part, const std::string& prefix,
                                    const std::map<std::string, std::string>& tensors) {
  std::set<std::string> inputs;
  for (const sgraph::TensorDecl& in : part.inputs) inputs.insert(in.name);
  const std::set<std::string> params = [&] {
    std::vector<std::string> p = part.parameters();
    return std::set<std::string>(p.begin(), p.end());
  }();
  auto tensor = [&](std::string& name) {
    if (auto it = tensors.find(name); it != tensors.end()) name = it->second;
    else if (!inputs.count(name)) name = prefix + name;
  };
  auto param = [&](Dim& d) {
    if (auto s = d.as_symbol(); s && params.count(*s)) d = Dim::symbol(prefix + *s);
  };
  std::vector<sgraph::Kernel> out = part.kernels;
  for (sgraph::Kernel& k : out) {
    if (!k.custom) {
      for (std::string& in : k.library.inputs) tensor(in);
      tensor(k.library.output);
      continue;
    }
    for (Dim& g : k.block.grid) param(g);
    if (k.block.loop) param(*k.block.loop);
    for (sgraph::BlockOp& op : k.block.ops) {
      if (op.kind == sgraph::BlockOp::Kind::Load) tensor(op.tensor);
      if (op.kind == sgraph::BlockOp::Kind::Save) tensor(op.name);
    }
  }
  return out;
}

// The one save of `tensor` in `ks`, by a custom kernel, whole (no partial axes) and as it lies:
// it now writes `tensor` in the order that reading it through `view` gives (a permutation keeping
// the last dim last), so that a reshape reads it in place (sgraph::reshapes_in_place). False, and
// nothing changed, where there is no such save.
bool save_through(std::vector<sgraph::Kernel>& ks, const std::string& tensor, const std::vector<int>& view) {
  std::vector<sgraph::BlockOp*> saves;
  for (sgraph::Kernel& k : ks)
    if (!k.custom && k.library.output == tensor) return false;
    else if (k.custom)
      for (sgraph::BlockOp& op : k.block.ops)
        if (op.kind == sgraph::BlockOp::Kind::Save && op.name == tensor) saves.push_back(&op);
  if (saves.size() != 1 || !saves[0]->view.empty() || view.empty() || view.back() != int(view.size()) - 1) return false;
  const sgraph::Map& map = saves[0]->map;
  if (std::any_of(map.grid.begin(), map.grid.end(), [](const sgraph::Choice& c) { return c.is_none(); })) return false;
  saves[0]->view = sgraph::inverse_view(view);
  return true;
}

}  // namespace

sgraph::SGraph compose_library_graph(const Program& program, const LibraryCut& cut, const sgraph::SGraph* prologue,
                                     const sgraph::SGraph* epilogue) {
  sgraph::SGraph g;
  for (int id : program.inputs) g.inputs.push_back({program.value(id).name, program.value(id).type});
  if (prologue) {
    std::vector<sgraph::Kernel> ks = renamed(*prologue, "pro_", {{prologue->outputs.at(0), cut.left}});
    g.kernels.insert(g.kernels.end(), ks.begin(), ks.end());
  }
  sgraph::Kernel lib;
  const std::string out = unused_tensor_name("O", program);
  lib.library.output = epilogue ? cut.product : out;
  lib.library.op = Op::Matmul;
  lib.library.dtype = program.value(cut.matmul).type.dtype;
  lib.library.inputs = {cut.left, cut.right};
  if (!cut.left_view.empty() || !cut.right_view.empty()) lib.library.views = {cut.left_view, cut.right_view};
  g.kernels.push_back(lib);
  if (epilogue) {
    std::vector<sgraph::Kernel> ks = renamed(*epilogue, "epi_", {{epilogue->outputs.at(0), out}});
    g.kernels.insert(g.kernels.end(), ks.begin(), ks.end());
  }
  g.outputs = {out};
  return g;
}

sgraph::SGraph compose_pieces(const Program& program, const KernelCut& cut, const std::vector<const sgraph::SGraph*>& pieces,
                              const std::vector<std::map<std::string, std::string>>& inputs) {
  sgraph::SGraph g;
  for (int id : program.inputs) g.inputs.push_back({program.value(id).name, program.value(id).type});
  // The graph's outputs (output_tensor_name); a piece that reads an output another piece
  // computes (cut at each output) reads that output's tensor.
  std::vector<std::string> returned;
  std::map<std::string, std::string> outputs_read;
  for (size_t k = 0; k < program.outputs.size(); ++k) {
    returned.push_back(output_tensor_name(program, k));
    outputs_read[cut_tensor(program.value(program.outputs[k]).name)] = returned.back();
  }
  auto tensor_of = [&](int value) {
    const auto it = std::find(program.outputs.begin(), program.outputs.end(), value);
    return it != program.outputs.end() ? returned[size_t(it - program.outputs.begin())] : cut_tensor(program.value(value).name);
  };
  // The copies of `from` (an input, or what piece `ks` computes into `source`), after it.
  auto add_copies = [&](int from, const std::string& source, std::vector<sgraph::Kernel>& ks) {
    std::vector<const LayoutCopy*> copies;
    for (const LayoutCopy& c : cut.copies)
      if (c.from == from) copies.push_back(&c);
    std::vector<sgraph::Kernel> after;
    for (const LayoutCopy* c : copies) {
      const Value& to = program.value(c->to);
      sgraph::Kernel copy;
      copy.library.output = tensor_of(to.id);
      copy.library.dtype = to.type.dtype;
      copy.library.op = Op::Reshape;
      copy.library.attrs.shape = to.type.shape;
      copy.library.inputs = {source};
      // The piece writes its value in the order the copy reads it, where it can: no copy then.
      if (!c->view.empty() && !(copies.size() == 1 && save_through(ks, source, c->view))) copy.library.views = {c->view};
      after.push_back(std::move(copy));
    }
    g.kernels.insert(g.kernels.end(), ks.begin(), ks.end());
    g.kernels.insert(g.kernels.end(), after.begin(), after.end());
  };
  for (int id : program.inputs) {
    std::vector<sgraph::Kernel> none;
    add_copies(id, program.value(id).name, none);
  }
  for (size_t j = 0; j < pieces.size(); ++j) {
    const std::string out = tensor_of(cut.computes[j]);
    std::map<std::string, std::string> tensors = j < inputs.size() ? inputs[j] : std::map<std::string, std::string>{};
    if (cut.outputs) tensors.insert(outputs_read.begin(), outputs_read.end());
    tensors[pieces[j]->outputs.at(0)] = out;
    std::vector<sgraph::Kernel> ks = renamed(*pieces[j], "p" + std::to_string(j + 1) + "_", tensors);
    add_copies(cut.computes[j], out, ks);
  }
  g.outputs = returned;
  return g;
}

}  // namespace prism::search
