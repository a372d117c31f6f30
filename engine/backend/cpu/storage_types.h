// 16-bit storage in the generated CPU code (issue 18): tensors declared f16 or bf16 stay 16-bit
// in memory, and every op computes in f32. prism_f16 and prism_bf16 hold the bits; reading one
// converts to float and assigning a float rounds to nearest even, exactly as the reference
// interpreter's engine/interp/half.h does. Where the CPU has F16C and AVX2, f16 converts with
// F16C's vector instructions; else, like bf16, by branch-free integer and float arithmetic (no
// F16C, no AVX-512 BF16 needed). Either way GCC vectorizes the loops that read or write them (a
// test compiles such loops and reads GCC's report).
// The fused kernels and the eager baseline share this text, so they round alike.
#pragma once
#include "engine/backend/cpu/kernel_sources.h"
#include "engine/ir/dtype.h"

namespace prism::backend::cpu {

// The C++ element type of storage at `dtype`: "float", "prism_f16", "prism_bf16".
inline const char* storage_type_name(DType dtype) {
  return dtype == DType::F16 ? "prism_f16" : dtype == DType::BF16 ? "prism_bf16" : "float";
}

inline constexpr const char* kStorageTypes = embedded::storage_types_h;

}  // namespace prism::backend::cpu
