// The AMX matmul of generated sources (Sapphire Rapids and later): bf16 x bf16 -> f32 on the
// tile unit, B's tiles loaded where B lies (A's values paired with zeros). Compiled in where the
// source defines PRISM_AMX (CodegenOptions::amx); at run time it runs where Linux grants the tile
// state, and the vector micro-kernel runs otherwise.
#pragma once

namespace prism::backend::cpu::detail {

extern const char* kAmxKernel;

// prism_mm_amx reads B's rows in pieces of at most this many columns (its NB, which the prelude
// defines as PRISM_AMX_COLUMNS): the cost model's access pattern (assumption 7) on the tiles.
constexpr long kAmxBlockColumns = 512;

}  // namespace prism::backend::cpu::detail
