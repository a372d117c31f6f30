#include "engine/sgraph/substitute_dims.h"

namespace prism::sgraph {

namespace {

void substitute(Attrs& attrs, const std::map<std::string, Dim>& values) {
  for (Dim& d : attrs.shape) d = d.substituted(values);
  if (attrs.constant.exact) attrs.constant.exact = attrs.constant.exact->substituted(values);
}

}  // namespace

SGraph substitute_dims(SGraph graph, const std::map<std::string, Dim>& values) {
  for (TensorDecl& in : graph.inputs)
    for (Dim& d : in.type.shape) d = d.substituted(values);
  for (Kernel& k : graph.kernels) {
    if (!k.custom) {
      substitute(k.library.attrs, values);
      continue;
    }
    for (Dim& d : k.block.grid) d = d.substituted(values);
    if (k.block.loop) k.block.loop = k.block.loop->substituted(values);
    for (BlockOp& op : k.block.ops) substitute(op.attrs, values);
  }
  return graph;
}

}  // namespace prism::sgraph
