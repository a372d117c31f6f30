// glibc's vector math library (libmvec) for the generated CPU code. Declared SIMD-callable
// ("notinbranch": the loop calls it on every lane), GCC vectorizes the loops that call expf and
// logf (glibc 2.22) and tanhf and erff (glibc 2.35) with libmvec's 16- and 8-lane variants
// instead of one scalar call per element: softmax, attention's exp, silu, gelu and tanh-GELU run
// at vector speed. The fused kernels and the eager baseline both declare it, so their ratios
// compare like with like. No flag links it: a C++ library links libm, and glibc's libm.so
// pulls in libmvec.so.1 as needed.
#pragma once
#include "engine/backend/cpu/kernel_sources.h"

namespace prism::backend::cpu {

inline constexpr const char* kVectorMath = embedded::vector_math_h;

}  // namespace prism::backend::cpu
