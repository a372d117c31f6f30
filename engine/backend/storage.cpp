#include "engine/backend/storage.h"

namespace prism::backend {

Program with_storage(Program program, DType dtype) {
  for (auto& v : program.values)
    if (!v.type.weak) v.type.dtype = dtype;
  return program;
}

sgraph::SGraph with_storage(sgraph::SGraph graph, DType dtype) {
  for (auto& input : graph.inputs) input.type.dtype = dtype;
  for (auto& kernel : graph.kernels) {
    if (!kernel.custom) {
      kernel.library.dtype = dtype;
      continue;
    }
    for (auto& op : kernel.block.ops)
      if (op.kind == sgraph::BlockOp::Kind::Save) op.dtype = dtype;
  }
  return graph;
}

}  // namespace prism::backend
