// The AMX matmuls of generated sources (Sapphire Rapids and later): bf16 x bf16 -> f32 on the
// tile unit, B's tiles loaded where B lies (A's values paired with zeros); f16 x f16, f32 x f16
// and f32 x bf16 -> f32, each value split into two bf16 (amx_split_kernel.cpp); and each of them
// against a B stored transposed (amx_nt_kernel.cpp). Compiled in where the source defines
// PRISM_AMX (CodegenOptions::amx); at run time it runs where Linux grants the tile state, and
// the vector micro-kernel runs otherwise.
#pragma once
#include <cstdint>

#include "engine/backend/cpu/kernels/amx_rules.h"
#include "engine/ir/dtype.h"

namespace prism::backend::cpu::detail {

extern const char* kAmxKernel;     // the tiles' macros and configuration, and bf16 x bf16
extern const char* kAmxSplitKernel;  // f16 x f16, f32 x f16, f32 x bf16, after kAmxKernel
extern const char* kAmxNtKernel;     // A x Bt^T (Bt stored [N x K]) for the same and bf16 x bf16, after both

// prism_mm_amx reads B's rows in pieces of at most this many columns (its NB, which the prelude
// defines as PRISM_AMX_COLUMNS): the cost model's access pattern (assumption 7) on the tiles.
constexpr long kAmxBlockColumns = 512;
// bf16 x bf16 matmuls whose B streams from memory (not prism_amx_cached_b) read B's rows in pieces
// of this many columns instead (PRISM_AMX_STREAM_COLUMNS): each step down K reads longer runs.
constexpr long kAmxStreamColumns = 2048;
// The pieces a matmul on the tiles reads B's rows in: A (`a`, `rows` x `k`) times B (`b`, `k` x `n`).
inline long amx_block_columns(DType a, DType b, int64_t rows, int64_t k, int64_t n) {
  return a == DType::BF16 && b == DType::BF16 && !prism_amx_cached_b(rows, k, n) ? kAmxStreamColumns : kAmxBlockColumns;
}

// f16 x f16 and f32 x f16 matmuls take the tiles from this many rows of A (PRISM_AMX_F16_ROWS in
// the prelude); with fewer, the FMA kernel is faster than splitting B into bf16 pairs
// (amx_split_kernel.cpp).
constexpr long kAmxF16MinRows = 12;
// f32 x bf16 matmuls from this many rows of A (PRISM_AMX_WIDE_ROWS), for the same reason.
constexpr long kAmxWideMinRows = 8;
// bf16 x bf16^T (the NT kernel, amx_nt_kernel.cpp) from this many rows of A (PRISM_AMX_NT_ROWS).
constexpr long kAmxNtMinRows = 4;

// Whether a source with AMX (and AVX-512) multiplies an A of `rows` rows, at dtype `a` as the
// kernel reads it (a computed tile is F32), by B at `b` on the tiles: stored as it is used
// (prism_amx), or `transposed` (prism_amx_nt). The prism_amx traits of the sources say the same.
inline bool amx_matmul(DType a, DType b, int64_t rows, bool transposed) {
  if (a == DType::BF16 && b == DType::BF16) return rows >= (transposed ? kAmxNtMinRows : 1);
  if (b == DType::F16 && (a == DType::F16 || a == DType::F32)) return rows >= kAmxF16MinRows;
  return a == DType::F32 && b == DType::BF16 && rows >= kAmxWideMinRows;
}

}  // namespace prism::backend::cpu::detail
