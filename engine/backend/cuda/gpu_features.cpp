#include "engine/backend/cuda/gpu_features.h"

namespace prism::backend::cuda {

const GpuFeatures& gpu_features(const TargetDescription& target) {
  static const GpuFeatures kDefaults;
  return target.features.has_value() ? features_of<GpuFeatures>(target, "GPU") : kDefaults;
}

GpuFeatures& gpu_features(TargetDescription& target) {
  if (!target.features.has_value()) target.features = GpuFeatures{};
  return features_of<GpuFeatures>(target, "GPU");
}

}  // namespace prism::backend::cuda
