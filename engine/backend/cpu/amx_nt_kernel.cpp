#include "engine/backend/cpu/amx_kernel.h"
#include "engine/backend/cpu/kernel_sources.h"

namespace prism::backend::cpu::detail {

// C[M x N] (= or +=) A[M x K] @ B^T on the tiles, B stored as Bt[N x K] (an nn.Linear weight
// [out, in] used as W^T, read where it lies): computed as C^T = Bt @ A^T, so that Bt's rows are
// the tile product's first operand as they lie (pairs along K). bf16 Bt's tiles are loaded from
// it; f16's are its rows split into (hi, lo) words (amx_split_kernel.cpp), with no transposes.
// A, small and shared by every column, is the one transposed: the words prism_split_a makes of
// each of its rows become the columns of the second operand's tiles, for all of K at once (in a
// thread's buffer). Tiles (prism_amx_configure's `swapped`): 0-1 C^T (16 columns of C by R rows
// each), 4-5 A^T (hi and lo, or bf16 A's one), 6-7 Bt. Per 16 rows of C, 32 rows of Bt at a time
// go down all of K, their two C^T tiles kept: each row of Bt is read in one run, 32 rows side by
// side (what hardware prefetchers follow), faster than 64 rows a strip over K panels
// (docs/tuning.md, "The CPU's other kernel choices").
const char* kAmxNtKernel = embedded::amx_nt_kernel_h;

}  // namespace prism::backend::cpu::detail
