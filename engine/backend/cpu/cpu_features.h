// What only the CPU backend knows of a CPU target: its vector width and the rates of its 16-bit
// paths, kept in TargetDescription::features (target.h). describe_cpu measures them; the CPU's
// cost rules and code generator read them.
#pragma once
#include "engine/backend/target.h"

namespace prism::backend::cpu {

// The CPU's target: the first built-in backend's place in the registry (tune/backends.cpp, whose
// test pins it), and so what a request that names no target runs on.
inline constexpr Target kTarget{0};

struct CpuFeatures {
  int simd_bytes = 32;                 // 16 SSE, 32 AVX2, 64 AVX-512
  double bf16_dot_gflops = 0;          // AVX-512 BF16: vdpbf16ps's measured peak (0: none)
  double bf16_dot_peak_gflops = 0;     // the same where bf16 x bf16 matmuls use it: only when it is at
                                       // least peak_gflops (else widening to f32 FMAs is faster, and
                                       // the code generator widens); 0: they widen
  double bf16_amx_gflops = 0;          // AMX-BF16 that Linux lets use: the tile unit's measured bf16
                                       // peak, which bf16 x bf16 matmuls use (0: none)
  double widen_f16_gflops = 0;         // FMAs fed by f16 vectors widened as they load, at most
                                       // peak_gflops (kernels/measure.cpp; 0: not measured, peak_gflops serves)
  double widen_bf16_gflops = 0;        // the same for bf16
};

// The CPU features of `target`; the defaults (an AVX2 CPU with no 16-bit units measured) when it
// has none. Throws Error{InvalidArgument} when it holds another backend's.
inline const CpuFeatures& cpu_features(const TargetDescription& target) { return features_of<CpuFeatures>(target, "CPU"); }
// The same to set, added to `target` when it has none.
inline CpuFeatures& cpu_features(TargetDescription& target) { return features_of<CpuFeatures>(target, "CPU"); }

}  // namespace prism::backend::cpu
