// What only the CUDA backend knows of a GPU target: the architecture NVRTC compiles for and the
// tensor cores' peak, kept in TargetDescription::features (target.h). cuda/describe.h fills them.
#pragma once
#include <string>

#include "engine/backend/target.h"

namespace prism::backend::cuda {

// A GPU's target: the second built-in backend's place in the registry (tune/backends.cpp, whose
// test pins it).
inline constexpr Target kTarget{1};

struct GpuFeatures {
  std::string arch;                // the virtual architecture NVRTC compiles for ("compute_90")
  double tensor_peak_gflops = 0;   // f16/bf16 dense peak on tensor cores, for block matmuls and the
                                   // roofline at 16-bit storage (0: none, peak_gflops serves)
  // A schedule's (CudaBackend::scheduled_target; never described or stored): the threads of a
  // block (0: the default schedule's), and the blocks an SM must hold at once: the target's cores
  // are then that many slots an SM, each with its share of the SM (fast_memory_bytes its shared
  // memory).
  int threads_per_block = 0;
  int blocks_per_sm = 1;
};

// The GPU features of `target`; the defaults (no architecture named, no tensor cores) when it has
// none. Throws Error{InvalidArgument} when it holds another backend's.
inline const GpuFeatures& gpu_features(const TargetDescription& target) { return features_of<GpuFeatures>(target, "GPU"); }
// The same to set, added to `target` when it has none.
inline GpuFeatures& gpu_features(TargetDescription& target) { return features_of<GpuFeatures>(target, "GPU"); }

}  // namespace prism::backend::cuda
