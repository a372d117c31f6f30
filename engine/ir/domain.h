// The values an input may take: declared after its type (`var: f16[d] >= 0`, `s: f32[n] > 0`), or
// inferred where a sqrt, rsqrt, log or division needs it (ir/input_domains.h). Random inputs are
// drawn inside it (interp/tensor.h's random_tensor).
#pragma once
#include <string>

namespace prism {

enum class Domain { Any, NonNegative, Positive };  // in order of strength

// " >= 0", " > 0", or "" for Domain::Any: how a declaration writes it after the type.
inline std::string domain_suffix(Domain domain) {
  return domain == Domain::NonNegative ? " >= 0" : domain == Domain::Positive ? " > 0" : "";
}

}  // namespace prism
