#include "engine/search/compose.h"

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

sgraph::SGraph compose_pieces(const Program& program, const KernelCut& cut, const std::vector<const sgraph::SGraph*>& pieces) {
  sgraph::SGraph g;
  for (int id : program.inputs) g.inputs.push_back({program.value(id).name, program.value(id).type});
  for (size_t j = 0; j < pieces.size(); ++j) {
    const bool last = j + 1 == pieces.size();
    const std::string out = last ? unused_tensor_name("O", program) : cut_tensor(program.value(cut.computes[j]).name);
    std::vector<sgraph::Kernel> ks = renamed(*pieces[j], "p" + std::to_string(j + 1) + "_", {{pieces[j]->outputs.at(0), out}});
    g.kernels.insert(g.kernels.end(), ks.begin(), ks.end());
    for (const LayoutCopy& c : cut.copies) {
      if (c.from != cut.computes[j]) continue;
      const Value& to = program.value(c.to);
      sgraph::Kernel copy;
      copy.library.output = cut_tensor(to.name);
      copy.library.dtype = to.type.dtype;
      copy.library.op = Op::Reshape;
      copy.library.attrs.shape = to.type.shape;
      copy.library.inputs = {out};
      if (!c.view.empty()) copy.library.views = {c.view};
      g.kernels.push_back(std::move(copy));
    }
  }
  g.outputs = {unused_tensor_name("O", program)};
  return g;
}

}  // namespace prism::search
