// Shared-memory rows padded against bank conflicts (docs/tuning.md, "The CUDA target"). An
// ldmatrix phase (and a WMMA fragment load) reads 8 rows of a tile, 16 bytes each; shared memory
// serves 128 bytes a cycle in 32 banks of 4, so rows a multiple of 32 bytes apart share banks and
// the phase takes as many cycles as rows share a 16-byte slot of the 128 (a decode block's f16
// weight tile, rows of 64 or 128 columns: 8 cycles for 1). A row padded by 16 bytes makes the 8
// rows fall in 8 different slots.
#pragma once
#include <cstdint>

#include "engine/backend/kernel_ir.h"

namespace prism::backend::cuda {

// How many of 8 rows `row_bytes` apart share the busiest 16-byte slot of a 128-byte bank cycle:
// 1 where none conflict, 8 where all do.
int ldmatrix_conflict_ways(int64_t row_bytes);

// `program` with the rows of every tile a custom kernel stages and only matmuls read (16-bit, two
// dims after any of size 1, copied in by rows of 16-byte vectors; read whole, from its start)
// padded by 16 bytes where
// 8 of them conflict: the tile's shape (its allocation) gains 8 elements a row, every place that
// reads or writes it the row stride, the tiles after it their offsets, the kernel its bytes. A tile
// stays dense where its padding would take the kernel past `shared_limit` bytes or cost its loop
// a pipeline stage (double_buffer.h, up to `max_stages`): loads in flight come first.
kir::Program pad_tile_rows(const kir::Program& program, int64_t shared_limit, int max_stages);

}  // namespace prism::backend::cuda
