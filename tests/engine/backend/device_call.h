// Test support for the GPU cases of the CUDA export and the plan library: f32 inputs copied to the
// device, a call on their device pointers (the default stream), output 0 copied back, and the
// comparison with the interpreter both make.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <vector>

#include "engine/backend/cuda/driver.h"
#include "engine/interp/tensor.h"

namespace prism::test {

// `call(inputs, outputs)` returns the entry point's code (0: launched).
inline std::vector<float> call_on_device(backend::cuda::CudaDevice& device, const std::vector<Tensor>& inputs, size_t out_elements,
                                         const std::function<int(const void* const*, void* const*)>& call) {
  std::vector<backend::cuda::CudaDevice::Ptr> ptrs;
  std::vector<const void*> in;
  for (const Tensor& t : inputs) {
    ptrs.push_back(device.allocate(t.data.size() * sizeof(float)));
    device.to_device(ptrs.back(), t.data.data(), t.data.size() * sizeof(float));
    in.push_back(reinterpret_cast<const void*>(ptrs.back()));
  }
  const auto out_ptr = device.allocate(out_elements * sizeof(float));
  void* out[] = {reinterpret_cast<void*>(out_ptr)};
  const int code = call(in.data(), out);
  device.synchronize();
  std::vector<float> got(out_elements);
  device.to_host(got.data(), out_ptr, got.size() * sizeof(float));
  for (auto p : ptrs) device.release(p);
  device.release(out_ptr);
  REQUIRE(code == 0);
  return got;
}

// f32 against the interpreter: relative 1e-3, and 1e-3 of the output's largest value.
inline void require_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  float scale = 0;
  for (float w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::fabs(got[i] - want[i]) <= 1e-3f * std::fabs(want[i]) + 1e-3f * scale);
  }
}

}  // namespace prism::test
