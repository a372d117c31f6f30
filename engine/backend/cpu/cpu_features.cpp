#include "engine/backend/cpu/cpu_features.h"

namespace prism::backend::cpu {

const CpuFeatures& cpu_features(const TargetDescription& target) {
  static const CpuFeatures kDefaults;
  return target.features.has_value() ? features_of<CpuFeatures>(target, "CPU") : kDefaults;
}

CpuFeatures& cpu_features(TargetDescription& target) {
  if (!target.features.has_value()) target.features = CpuFeatures{};
  return features_of<CpuFeatures>(target, "CPU");
}

}  // namespace prism::backend::cpu
