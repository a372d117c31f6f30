// A concrete tensor for the reference interpreter: row-major f32 values that are all exactly
// representable in `dtype` (f16 and bf16 values are stored widened to f32).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/domain.h"
#include "engine/ir/dtype.h"
#include "engine/ir/shape.h"

namespace prism {

// Largest tensor the interpreter will allocate (elements); larger requests are InvalidArgument.
constexpr int64_t kMaxTensorElements = int64_t(1) << 30;

struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<float> data;

  int64_t size() const { return int64_t(data.size()); }
  // A zero tensor; throws Error{InvalidArgument} when the shape is over kMaxTensorElements.
  static Tensor zeros(DType dtype, std::vector<int64_t> shape);
};

// Product of the dims; throws Error{InvalidArgument} on overflow or over kMaxTensorElements.
int64_t checked_element_count(const std::vector<int64_t>& shape);

// Deterministic pseudo-random input: element i of the tensor named `name` is
//   u = top 24 bits of splitmix64 step i of the state (seed ^ fnv1a64(name)), scaled to [0, 1),
//   value = 2u - 1 in [-1, 1), moved into `domain` (|value| for non-negative, 1/64 + 63/64 |value|
//   for positive: away from 0, where a divisor or a log needs it), then rounded to `dtype` (which
//   may round values next to 1 up to 1).
// The same (seed, name, dtype, shape, domain) always gives the same tensor, independent of other inputs.
Tensor random_tensor(DType dtype, const std::vector<int64_t>& shape, uint64_t seed, const std::string& name, Domain domain = Domain::Any);
// `x` moved into `domain` as random_tensor moves its values (before rounding).
float into_domain(float x, Domain domain);

}  // namespace prism
