#include "engine/backend/cuda/run_worker.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "engine/backend/cuda/cublas.h"
#include "engine/backend/cuda/driver.h"
#include "engine/backend/cuda/plan.h"
#include "engine/backend/cuda/plan_run.h"
#include "engine/error.h"
#include "engine/interp/half.h"

namespace prism::backend::cuda {

namespace {

// f32 values as `dtype`'s bytes (round to nearest even).
std::vector<char> encode(const float* data, int64_t n, DType dtype) {
  std::vector<char> bytes(size_t(n) * size_t(dtype_bytes(dtype)));
  if (dtype == DType::F32) {
    std::memcpy(bytes.data(), data, bytes.size());
    return bytes;
  }
  auto* out = reinterpret_cast<uint16_t*>(bytes.data());
  for (int64_t i = 0; i < n; ++i) out[i] = dtype == DType::F16 ? f32_to_f16_bits(data[i]) : f32_to_bf16_bits(data[i]);
  return bytes;
}

std::vector<float> decode(const std::vector<char>& bytes, int64_t n, DType dtype) {
  std::vector<float> out(static_cast<size_t>(n));
  if (dtype == DType::F32) {
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
  }
  const auto* in = reinterpret_cast<const uint16_t*>(bytes.data());
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = dtype == DType::F16 ? f16_bits_to_f32(in[i]) : bf16_bits_to_f32(in[i]);
  return out;
}

// The primary context and the cuBLAS handle live as long as the worker: a fresh CudaDevice per
// run (its own modules: every candidate names its kernels alike) retains the context cheaply.
struct Session {
  std::unique_ptr<CudaDevice> keep;
  std::unique_ptr<Cublas> cublas;
};
Session& session() {
  static Session s;
  return s;
}

// Device memory released however the run ends.
struct Allocations {
  CudaDevice& device;
  std::vector<CudaDevice::Ptr> ptrs;
  ~Allocations() {
    for (auto p : ptrs) try {
        device.release(p);
      } catch (const std::exception&) {
      }
  }
};

std::string run(const CudaPlan& plan, const std::string& out_path, const std::vector<HostInput>& inputs, int warmup, int runs) {
  if (plan.inputs.size() != inputs.size())
    return "error the plan has " + std::to_string(plan.inputs.size()) + " inputs, the worker holds " + std::to_string(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (plan.inputs[i].elements != inputs[i].elements)
      return "error input " + std::to_string(i) + " (" + plan.inputs[i].name + ") has " + std::to_string(inputs[i].elements) +
             " elements, the plan says " + std::to_string(plan.inputs[i].elements);
  Session& s = session();
  if (!s.keep) s.keep = std::make_unique<CudaDevice>();
  CudaDevice device;
  if (plan.uses_cublas() && !s.cublas) s.cublas = std::make_unique<Cublas>();
  device.load_ptx(plan.ptx);

  Allocations mem{device, {}};
  DeviceTensors tensors;
  auto allocate = [&](const CudaTensor& t) {
    CudaDevice::Ptr p = device.allocate(size_t(t.elements) * size_t(dtype_bytes(t.dtype)));
    mem.ptrs.push_back(p);
    tensors[t.name] = {p, t.dtype};
    return p;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const CudaTensor& t = plan.inputs[i];
    std::vector<char> bytes = encode(inputs[i].data, t.elements, t.dtype);
    device.to_device(allocate(t), bytes.data(), bytes.size());
  }
  for (const CudaTensor& t : plan.outputs) {
    std::vector<float> nan(size_t(t.elements), std::nanf(""));
    std::vector<char> bytes = encode(nan.data(), t.elements, t.dtype);
    device.to_device(allocate(t), bytes.data(), bytes.size());
  }
  for (const CudaTensor& t : plan.scratch) {
    const CudaDevice::Ptr p = allocate(t);
    if (t.zeroed) device.zero_async(p, size_t(t.elements) * size_t(dtype_bytes(t.dtype)), nullptr);
  }
  auto sequence = [&] { run_steps(plan, device, s.cublas.get(), tensors); };
  sequence();
  device.synchronize();
  if (out_path != "-") {  // "-": a timing round, nothing written back
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    for (const CudaTensor& t : plan.outputs) {
      std::vector<char> bytes(size_t(t.elements) * size_t(dtype_bytes(t.dtype)));
      device.to_host(bytes.data(), tensors.at(t.name).ptr, bytes.size());
      std::vector<float> values = decode(bytes, t.elements, t.dtype);
      out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * 4));
    }
    if (!out) return "error cannot write the outputs to " + out_path;
  }
  for (int i = 0; i < warmup; ++i) sequence();
  device.synchronize();
  std::vector<double> times;
  for (int i = 0; i < std::max(1, runs); ++i) {
    device.flush_l2();  // each run starts cold, as on a model too large for L2
    times.push_back(device.time_ms(sequence, 1));
  }
  // Every launch must leave its ticket counters zero (ticket.h), or the next call computes wrong.
  for (const CudaTensor& t : plan.scratch) {
    if (!t.zeroed) continue;
    std::vector<unsigned> words(size_t(t.elements));
    device.to_host(words.data(), tensors.at(t.name).ptr, words.size() * 4);
    for (unsigned w : words)
      if (w != 0) return "error the plan's launches left its ticket counters " + t.name + " nonzero";
  }
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  double median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  char reply[128];
  std::snprintf(reply, sizeof reply, "ok %.6f %.6f %zu", median, times.front(), n);
  return reply;
}

}  // namespace

std::string run_cuda_plan(const std::string& plan_path, const std::string& out_path, const std::vector<HostInput>& inputs,
                          int warmup, int runs) {
  std::ifstream in(plan_path, std::ios::binary);
  if (!in) return "error cannot read the CUDA plan " + plan_path;
  std::stringstream text;
  text << in.rdbuf();
  try {
    return run(parse_plan(text.str()), out_path, inputs, warmup, runs);
  } catch (const std::exception& e) {
    return std::string("error ") + e.what();
  }
}

}  // namespace prism::backend::cuda
