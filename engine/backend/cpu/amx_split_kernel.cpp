#include "engine/backend/cpu/amx_kernel.h"
#include "engine/backend/cpu/kernel_sources.h"

namespace prism::backend::cpu::detail {

// Matmuls whose operands the tile unit cannot take as they are, on the bf16 tiles (kAmxKernel's
// macros and configuration: tiles 0-3 C, 4-5 A, 6-7 B): f16 x f16, and an f32 A (a computed
// tile: softmax's probabilities, an activation) times f16 or bf16 B; and bf16 x bf16 where B is
// read from L2 by several blocks of rows (kAmxKernel hands those over). Sapphire Rapids has no f16
// tile products, but a value splits into hi (its f32's top 16 bits, a bf16) plus lo (the rest as
// a bf16): exactly for an f16 (11 significant bits, lo at most 3), within 2^-16 of it for an f32
// (lo's low bits truncated). What each tile product pairs (prism_split_kind):
//  - f16 B: B's words (hi, lo) of one K row; A's (a_hi, a_hi) on tile 4 and (a_lo, a_lo) on
//    tile 5. The two products of a B tile add a_hi * (hi + lo) + a_lo * (hi + lo).
//  - bf16 B: B's words pair K rows 2i and 2i + 1 of a column; A's values in K order, its hi on
//    tile 4 and lo on tile 5. The two products add a_hi * b + a_lo * b.
// Every product is exact and the sums are in f32, as in the FMA kernels. Only infinities differ:
// an infinite operand meets a zero half of the other (0 * inf), so the sum is NaN where the
// reference has +-inf (B's lo is not even guarded: inf - inf).
// B's words are staged per visit on the vector units, so with few rows of A the FMA kernel is
// faster (kAmxF16MinRows, kAmxWideMinRows).
// Order: as the bf16 kernel, per 16 rows of C and 512 columns, K advancing one tile row's worth
// (16 or 32 rows) at a time over every 64-column strip (or a whole panel per strip where B is
// read from L2: prism_amx_cached_b); each strip's piece of B is staged into an L1 buffer and its
// four C tiles (16 columns each, in order) come from and go back to L1. Each piece is staged one
// strip ahead of its products, into the other of two buffers, so the vector units convert the next
// piece while the tiles multiply this one: with the piece staged just before its own products, the
// tile unit's work, the staging and the reads of B added up almost in series. The measurements
// behind these choices: docs/tuning.md, "The CPU's other kernel choices".
const char* kAmxSplitKernel = embedded::amx_split_kernel_h;

}  // namespace prism::backend::cpu::detail
