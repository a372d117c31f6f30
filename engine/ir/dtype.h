// Element types and the promotion rule for binary ops.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace prism {

enum class DType { F32, F16, BF16 };

const char* dtype_name(DType t);                          // "f32" | "f16" | "bf16"
int64_t dtype_bytes(DType t);                             // bytes of one stored element: 4 or 2
std::optional<DType> parse_dtype(std::string_view name);
// The wider of two types: equal types stay, f32 with anything is f32, and f16 with bf16 is f32
// (neither holds the other's values).
DType wider(DType a, DType b);
// Whether rounding a value of dtype `from` to `to` may change it: f32 holds every value of the
// others, so only a cast to a different 16-bit type narrows (f32 -> f16, f16 -> bf16, ...).
bool narrows(DType to, DType from);
// The one of fewer significand bits, whose rounding is the larger: bf16 (8) before f16 (11)
// before f32 (24).
DType coarser(DType a, DType b);
// The largest relative error of rounding to `t` (to nearest): 2^-8 bf16, 2^-11 f16, 2^-24 f32.
double unit_roundoff(DType t);

}  // namespace prism
