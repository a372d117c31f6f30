#include "engine/interp/tensor.h"

#include <cmath>

#include "engine/error.h"
#include "engine/interp/half.h"
#include "engine/util/hash.h"

namespace prism {

int64_t checked_element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > kMaxTensorElements / d))
      throw Error(Error::Kind::InvalidArgument, "tensor of shape " + shape_text(shape) + " is larger than the interpreter's limit of " +
                                                    std::to_string(kMaxTensorElements) + " elements");
    n *= d;
  }
  return n;
}

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.data.assign(size_t(checked_element_count(shape)), 0.0f);
  t.shape = std::move(shape);
  return t;
}

namespace {
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

float into_domain(float x, Domain domain) {
  switch (domain) {
    case Domain::NonNegative: return std::fabs(x);
    case Domain::Positive: return 1.0f / 64 + std::fabs(x) * (63.0f / 64);
    case Domain::Any: break;
  }
  return x;
}

Tensor random_tensor(DType dtype, const std::vector<int64_t>& shape, uint64_t seed, const std::string& name, Domain domain) {
  Tensor t = Tensor::zeros(dtype, shape);
  uint64_t state = seed ^ fnv1a64(name);
  for (float& v : t.data) {
    float u = float(splitmix64(state) >> 40) * (1.0f / 16777216.0f);  // exact: 24 bits in f32
    v = round_to(dtype, into_domain(2.0f * u - 1.0f, domain));
  }
  return t;
}

}  // namespace prism
