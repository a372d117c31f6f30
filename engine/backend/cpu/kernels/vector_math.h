#include <features.h>
// glibc's libmvec: GCC calls its vector variants from vectorized loops.
extern "C" {
float expf(float) noexcept __attribute__((__simd__("notinbranch"), __const__));
float logf(float) noexcept __attribute__((__simd__("notinbranch"), __const__));
#if __GLIBC_PREREQ(2, 35)
float tanhf(float) noexcept __attribute__((__simd__("notinbranch"), __const__));
float erff(float) noexcept __attribute__((__simd__("notinbranch"), __const__));
#endif
}
