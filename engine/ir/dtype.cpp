#include "engine/ir/dtype.h"

namespace prism {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "f32") return DType::F32;
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  return std::nullopt;
}

int64_t dtype_bytes(DType t) { return t == DType::F32 ? 4 : 2; }

DType wider(DType a, DType b) { return a == b ? a : DType::F32; }

bool narrows(DType to, DType from) { return to != from && to != DType::F32; }

DType coarser(DType a, DType b) {
  if (a == DType::BF16 || b == DType::BF16) return DType::BF16;
  return a == DType::F16 || b == DType::F16 ? DType::F16 : DType::F32;
}

double unit_roundoff(DType t) { return t == DType::BF16 ? 1.0 / 256 : t == DType::F16 ? 1.0 / 2048 : 1.0 / (1 << 24); }

}  // namespace prism
