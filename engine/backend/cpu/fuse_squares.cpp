#include "engine/backend/cpu/fuse_squares.h"

#include <vector>

namespace prism::backend::cpu {

namespace {

bool same_place(const kir::Place& a, const kir::Place& b) {
  if (a.kind != b.kind || a.value != b.value || a.tensor != b.tensor || a.shape != b.shape || a.strides != b.strides || a.start != b.start ||
      a.offset.size() != b.offset.size())
    return false;
  for (size_t i = 0; i < a.offset.size(); ++i)
    if (a.offset[i].block != b.offset[i].block || a.offset[i].scale != b.offset[i].scale) return false;
  return true;
}

bool reads_value(const kir::Place& p, int value) { return p.kind != kir::Place::Kind::Tensor && p.value == value; }

// How many statements of the kernel read block value `value`.
int readers(const kir::CustomKernel& k, int value) {
  int n = 0;
  for (const auto* phase : {&k.before, &k.body, &k.after})
    for (const kir::Stmt& s : *phase) {
      bool reads = s.next_b && reads_value(*s.next_b, value);
      for (const kir::Place& p : s.in) reads = reads || reads_value(p, value);
      n += reads ? 1 : 0;
    }
  return n;
}

// x * x, or square(x) (what `x.pow(2)` imports as: RMSNorm as transformers writes it), into a
// tile of its own shape.
bool is_square(const kir::Stmt& s) {
  const bool product = s.op == Op::Mul && s.in.size() == 2 && same_place(s.in[0], s.in[1]);
  const bool square = s.op == Op::Square && s.in.size() == 1;
  return s.kind == kir::Stmt::Kind::Compute && (product || square) && s.out.kind == kir::Place::Kind::Tile && s.out.shape == s.in[0].shape;
}

int fuse_phase(const kir::CustomKernel& k, std::vector<kir::Stmt>& phase) {
  int fused = 0;
  for (size_t i = 0; i < phase.size(); ++i) {
    if (!is_square(phase[i]) || readers(k, phase[i].value) != 1) continue;
    // Its one reader, later in the same phase (tiles are never reused: the operand still holds x there).
    for (size_t j = i + 1; j < phase.size(); ++j) {
      kir::Stmt& sum = phase[j];
      if (sum.kind != kir::Stmt::Kind::Compute || sum.op != Op::Sum || sum.in.size() != 1 || !same_place(sum.in[0], phase[i].out)) continue;
      sum.squares = true;
      sum.in[0] = phase[i].in[0];
      sum.label += " of squares";
      phase.erase(phase.begin() + std::ptrdiff_t(i));
      --i;
      ++fused;
      break;
    }
  }
  return fused;
}

}  // namespace

int fuse_squares(kir::Program& program) {
  int fused = 0;
  for (kir::Kernel& kernel : program.kernels) {
    if (!kernel.custom) continue;
    kir::CustomKernel& k = kernel.block;
    for (auto* phase : {&k.before, &k.body, &k.after}) fused += fuse_phase(k, *phase);
  }
  return fused;
}

}  // namespace prism::backend::cpu
