// Which way an AMX matmul reads B, written once: the kernels (amx_kernel.h, amx_split_kernel.h)
// and the CPU's cost rules (engine/backend/cpu/amx_kernel.h, amx_block_columns) both read it.
// Generated sources with AMX hold this file (codegen_matmul.cpp); the engine includes it.
#ifndef PRISM_AMX_RULES_H
#define PRISM_AMX_RULES_H
// Where more than 16 rows of A pass over a 16-bit B of at most 1 MiB, B is read from L2 by all
// but the first block of 16 rows, and a strip's C tiles stay in the tiles over a whole K panel;
// else B streams in (docs/tuning.md, "The CPU's cost rules").
constexpr bool prism_amx_cached_b(long m, long k, long n) { return m > 16 && k * n * 2 <= (1L << 20); }
#endif
