// Walks an sGraph kernel by kernel and op by op, with one hook per kernel kind and per block-op
// kind (the Halide IRVisitor style of engine/ir/visitor.h). A pass overrides the hooks it needs.
#pragma once
#include "engine/sgraph/sgraph.h"

namespace prism::sgraph {

class Visitor {
 public:
  virtual ~Visitor() = default;

  void visit(const SGraph& graph) {
    for (size_t k = 0; k < graph.kernels.size(); ++k) visit_kernel(int(k), graph.kernels[k]);
  }

  void visit_kernel(int index, const Kernel& kernel) {
    if (!kernel.custom) return visit_library(index, kernel.library);
    begin_custom(index, kernel.block);
    for (size_t i = 0; i < kernel.block.ops.size(); ++i) dispatch(kernel.block, int(i));
    end_custom(index, kernel.block);
  }

  void dispatch(const CustomKernel& kernel, int i) {
    const BlockOp& op = kernel.ops[size_t(i)];
    switch (op.kind) {
      case BlockOp::Kind::Load: return visit_load(kernel, i, op);
      case BlockOp::Kind::Compute: return visit_compute(kernel, i, op);
      case BlockOp::Kind::Accumulate: return visit_accumulate(kernel, i, op);
      case BlockOp::Kind::Save: return visit_save(kernel, i, op);
    }
  }

 protected:
  virtual void visit_library(int, const LibraryKernel&) {}
  virtual void begin_custom(int, const CustomKernel&) {}
  virtual void end_custom(int, const CustomKernel&) {}
  virtual void visit_load(const CustomKernel&, int, const BlockOp&) {}
  virtual void visit_compute(const CustomKernel&, int, const BlockOp&) {}
  virtual void visit_accumulate(const CustomKernel&, int, const BlockOp&) {}
  virtual void visit_save(const CustomKernel&, int, const BlockOp&) {}
};

}  // namespace prism::sgraph
