
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512BF16__) && !defined(PRISM_EMULATE_AVX512BF16)
#include <immintrin.h>  // vdpbf16ps (0.3 s more per compile, only on CPUs that have it)
#endif
#if defined(PRISM_AMX)
#include <sys/syscall.h>  // arch_prctl: the tile state is granted on request
#include <unistd.h>
#endif

// OpenBLAS (every library links it, cpu_backend.cpp): the vendor matmul of library kernels.
extern "C" void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                            const float* b, int ldb, float beta, float* c, int ldc);
extern "C" void openblas_set_num_threads(int threads);

