#include "engine/backend/cpu/amx_kernel.h"

#include "engine/backend/cpu/kernel_sources.h"

namespace prism::backend::cpu::detail {

// Tiles: 0-3 hold a 16 x 64 block of C (four 16 x 16 f32 tiles: even and odd columns of each
// half), 4 and 5 A's tiles (R rows of 16 values, each beside a zero), 6 and 7 B's (16 rows of 32
// columns, loaded where B lies). Rows past M are not computed (the tiles are configured with R
// rows); K past its end and columns past N are zeros in a padded copy. The tile instructions are
// written as inline assembly (the assembler knows them; the compiler needs no -mamx flags and no
// <immintrin.h>). The prelude includes <sys/syscall.h> and <unistd.h> for it, outside its
// namespace.
const char* kAmxKernel = embedded::amx_kernel_h;

}  // namespace prism::backend::cpu::detail
