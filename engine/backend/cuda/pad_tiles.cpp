#include "engine/backend/cuda/pad_tiles.h"

#include <algorithm>
#include <map>

#include "engine/backend/cuda/double_buffer.h"
#include "engine/backend/lower.h"

namespace prism::backend::cuda {

namespace {

constexpr int64_t kSlotBytes = 16, kBankCycleBytes = 128, kPhaseRows = 8;
// A tile's allocation, as the lowering aligns it.
int64_t aligned(int64_t bytes) {
  const int64_t align = cuda_lowering().tile_align_bytes;
  return (bytes + align - 1) / align * align;
}

// Every place of the kernel that names a tile, with the statement it belongs to.
template <typename F>
void for_each_tile_place(kir::CustomKernel& k, F f) {
  for (auto* phase : {&k.before, &k.body, &k.after})
    for (kir::Stmt& s : *phase) {
      for (size_t i = 0; i < s.in.size(); ++i)
        if (s.in[i].kind == kir::Place::Kind::Tile) f(s, s.in[i], false);
      if (s.out.kind == kir::Place::Kind::Tile) f(s, s.out, true);
      if (s.next_b && s.next_b->kind == kir::Place::Kind::Tile) f(s, *s.next_b, false);
    }
}

// A shape of two dims after leading dims of 1 (a block's one head of attention): a matrix.
bool matrix_shape(const std::vector<int64_t>& shape) {
  return shape.size() >= 2 && std::all_of(shape.begin(), shape.end() - 2, [](int64_t d) { return d == 1; });
}
int64_t rows_of(const std::vector<int64_t>& shape) { return shape[shape.size() - 2]; }
int64_t cols_of(const std::vector<int64_t>& shape) { return shape.back(); }

// A place that covers the whole tile of storage shape {…, rows, cols}, as it lies or transposed.
bool whole(const kir::Place& p, int64_t rows, int64_t cols) {
  if (p.start != 0 || !matrix_shape(p.shape)) return false;
  const size_t r = p.shape.size() - 2;
  const std::vector<int64_t> shape{p.shape[r], p.shape[r + 1]}, strides{p.strides[r], p.strides[r + 1]};
  const bool as_lies = shape == std::vector<int64_t>{rows, cols} && strides == std::vector<int64_t>{cols, 1};
  const bool transposed = shape == std::vector<int64_t>{cols, rows} && strides == std::vector<int64_t>{1, cols};
  return as_lies || transposed;
}

// Whether tile `t` is staged by rows of 16-byte vectors and only matmuls read it, whole.
bool paddable(kir::CustomKernel& k, const kir::Tile& t) {
  if (!matrix_shape(t.shape) || dtype_bytes(t.storage) != 2 || rows_of(t.shape) < kPhaseRows) return false;
  const int64_t rows = rows_of(t.shape), cols = cols_of(t.shape), row_bytes = cols * 2;
  if (row_bytes % kSlotBytes != 0 || ldmatrix_conflict_ways(row_bytes) == 1) return false;
  bool ok = true, staged = false, read = false;
  for_each_tile_place(k, [&](const kir::Stmt& s, const kir::Place& p, bool is_out) {
    if (p.value != t.value) return;
    if (!whole(p, rows, cols)) ok = false;
    if (is_out) {
      // The copy in: rows of the tensor box contiguous and 16-byte multiples apart (emit_tile_load's vectors).
      const kir::Place& from = s.in.empty() ? p : s.in[0];
      const size_t n = from.strides.size();
      const bool rows_copy = s.kind == kir::Stmt::Kind::Stage && p.strides.back() == 1 && matrix_shape(from.shape) && n >= 2 &&
                             from.strides[n - 1] == 1 && from.strides[n - 2] * 2 % kSlotBytes == 0;
      ok = ok && rows_copy;
      staged = true;
    } else {
      ok = ok && s.kind == kir::Stmt::Kind::Compute && s.op == Op::Matmul;
      read = true;
    }
  });
  return ok && staged && read;
}

// The bytes a two-dim 16-bit tile grows by with its rows padded (its allocation stays aligned).
int64_t padding_growth(const kir::Tile& t) {
  const int64_t rows = rows_of(t.shape), cols = cols_of(t.shape);
  return aligned(rows * (cols + kSlotBytes / 2) * 2) - aligned(rows * cols * 2);
}

void pad(kir::CustomKernel& k, size_t index) {
  kir::Tile& t = k.tiles[index];
  const int64_t rows = rows_of(t.shape), cols = cols_of(t.shape), padded = cols + kSlotBytes / 2, growth = padding_growth(t);
  for_each_tile_place(k, [&](const kir::Stmt&, kir::Place& p, bool) {
    if (p.value != t.value) return;
    const size_t r = p.strides.size() - 2;
    for (size_t d = 0; d < r; ++d) p.strides[d] = rows * padded;  // dims of 1: a matrix apart
    for (size_t d = r; d < p.strides.size(); ++d)
      if (p.strides[d] == cols) p.strides[d] = padded;
  });
  const int64_t at = t.offset_bytes;
  t.shape.back() = padded;
  for (kir::Tile& other : k.tiles)
    if (other.offset_bytes > at) other.offset_bytes += growth;
  k.fast_memory_bytes += growth;
}

}  // namespace

int ldmatrix_conflict_ways(int64_t row_bytes) {
  std::map<int64_t, int> slots;
  int ways = 0;
  for (int64_t r = 0; r < kPhaseRows; ++r) ways = std::max(ways, ++slots[r * row_bytes % kBankCycleBytes / kSlotBytes]);
  return ways;
}

kir::Program pad_tile_rows(const kir::Program& program, int64_t shared_limit, int max_stages) {
  kir::Program out = program;
  for (kir::Kernel& kernel : out.kernels) {
    if (!kernel.custom) continue;
    kir::CustomKernel& k = kernel.block;
    const int stages = plan_double_buffer(k, shared_limit, max_stages).stages;
    for (size_t i = 0; i < k.tiles.size(); ++i) {
      if (!paddable(k, k.tiles[i]) || k.fast_memory_bytes + padding_growth(k.tiles[i]) > shared_limit) continue;
      kir::CustomKernel padded = k;
      pad(padded, i);
      if (plan_double_buffer(padded, shared_limit, max_stages).stages == stages) k = std::move(padded);
    }
  }
  return out;
}

}  // namespace prism::backend::cuda
