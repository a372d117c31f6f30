#include "engine/backend/cpu/parallel_grain.h"

#include "engine/ir/shape.h"

namespace prism::backend::cpu {

namespace {

int64_t phase_work(const std::vector<kir::Stmt>& phase) {
  int64_t work = 0;
  for (const kir::Stmt& s : phase) {
    if (s.kind == kir::Stmt::Kind::Bind) continue;  // read where it lies: no work
    const bool reads = s.kind == kir::Stmt::Kind::Accumulate && !s.in.empty();
    int64_t elements = element_count(reads ? s.in[0].shape : s.out.shape);
    if (s.kind == kir::Stmt::Kind::Compute && s.op == Op::Matmul && !s.in.empty() && !s.in[0].shape.empty())
      elements *= s.in[0].shape.back();
    work += elements;
  }
  return work;
}

}  // namespace

int64_t kernel_work(const kir::CustomKernel& kernel) {
  return kernel.blocks() * (phase_work(kernel.before) + kernel.loop * phase_work(kernel.body) + phase_work(kernel.after));
}

}  // namespace prism::backend::cpu
