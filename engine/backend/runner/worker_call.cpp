#include "engine/backend/runner/worker_call.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "engine/interp/half.h"

namespace prism::backend {

namespace {

std::unique_ptr<HostBuffer> buffer(int64_t elements, DType dtype) {
  try {
    return std::make_unique<HostBuffer>(static_cast<size_t>(elements * dtype_bytes(dtype)));
  } catch (const std::bad_alloc&) {
    throw std::runtime_error("out of memory for " + std::to_string(elements) + " elements");
  }
}

float widened(const OutputValues& o, int64_t i) {
  const auto* bits = static_cast<const uint16_t*>(o.data);
  switch (o.dtype) {
    case DType::F16: return f16_bits_to_f32(bits[i]);
    case DType::BF16: return bf16_bits_to_f32(bits[i]);
    case DType::F32: break;
  }
  return static_cast<const float*>(o.data)[i];
}

}  // namespace

std::string WorkerInputs::read(const std::string& path, const std::vector<int64_t>& sizes) {
  sizes_.clear();
  f32_.clear();
  narrow_.clear();
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read " + path;
  for (int64_t s : sizes) {
    f32_.push_back(buffer(s, DType::F32));
    sizes_.push_back(s);
    in.read(static_cast<char*>(f32_.back()->data()), static_cast<std::streamsize>(s * 4));
  }
  return in ? "" : "the inputs file " + path + " is shorter than its tensors";
}

const void* WorkerInputs::at(size_t i, DType dtype) {
  if (dtype == DType::F32) return f32(i);
  std::unique_ptr<HostBuffer>& copy = narrow_[{i, dtype}];
  if (!copy) {
    copy = buffer(elements(i), dtype);
    auto* bits = static_cast<uint16_t*>(copy->data());
    const float* from = f32(i);
    for (int64_t k = 0; k < elements(i); ++k) bits[k] = dtype == DType::F16 ? f32_to_f16_bits(from[k]) : f32_to_bf16_bits(from[k]);
  }
  return copy->data();
}

std::string write_outputs(const std::string& path, const std::vector<OutputValues>& outputs) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const OutputValues& o : outputs) {
    if (o.dtype == DType::F32) {
      out.write(static_cast<const char*>(o.data), static_cast<std::streamsize>(o.elements * 4));
      continue;
    }
    std::vector<float> wide(static_cast<size_t>(o.elements));
    for (int64_t i = 0; i < o.elements; ++i) wide[size_t(i)] = widened(o, i);
    out.write(reinterpret_cast<const char*>(wide.data()), static_cast<std::streamsize>(wide.size() * 4));
  }
  return out ? "" : "error cannot write the outputs to " + path;
}

HostOutputs::HostOutputs(const std::vector<int64_t>& elements, const std::vector<DType>& dtypes) {
  for (size_t o = 0; o < elements.size(); ++o) {
    const DType dtype = o < dtypes.size() ? dtypes[o] : DType::F32;
    buffers_.push_back(buffer(elements[o], dtype));
    void* data = buffers_.back()->data();
    if (dtype == DType::F32) std::fill_n(static_cast<float*>(data), elements[o], std::nanf(""));
    else std::fill_n(static_cast<uint16_t*>(data), elements[o], uint16_t(dtype == DType::F16 ? 0x7e00 : 0x7fc0));
    pointers_.push_back(data);
    values_.push_back({data, elements[o], dtype});
  }
}

std::string dtype_list_text(const std::vector<DType>& dtypes) {
  std::string s;
  for (size_t i = 0; i < dtypes.size(); ++i) s.append(i ? "," : "").append(dtype_name(dtypes[i]));
  return s;
}

std::vector<DType> parse_dtype_list(const std::string& text) {
  std::vector<DType> out;
  std::istringstream in(text);
  for (std::string name; std::getline(in, name, ',');) {
    const std::optional<DType> t = parse_dtype(name);
    if (!t) throw std::runtime_error("unknown dtype '" + name + "' in a run's words");
    out.push_back(*t);
  }
  return out;
}

std::string run_host_kernel(const WorkerCall& call, const HostOutputs& outputs, const std::function<std::string()>& once,
                            const HostTiming& timing) {
  if (auto e = once(); !e.empty()) return e;
  if (call.out_path != "-")
    if (auto e = outputs.write(call.out_path); !e.empty()) return e;
  for (int i = 0; i < timing.warmup; ++i)
    if (auto e = once(); !e.empty()) return e;
  std::vector<double> times;
  const auto begin = std::chrono::steady_clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count(); };
  while (int(times.size()) < timing.max_runs && (int(times.size()) < timing.min_runs || elapsed_s() < timing.min_time_s)) {
    const auto t0 = std::chrono::steady_clock::now();
    if (auto e = once(); !e.empty()) return e;
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return timed_reply(times);
}

std::string timed_reply(std::vector<double> times_ms) {
  if (times_ms.empty()) return "error no call was timed";
  std::sort(times_ms.begin(), times_ms.end());
  const size_t n = times_ms.size();
  const double median = n % 2 ? times_ms[n / 2] : (times_ms[n / 2 - 1] + times_ms[n / 2]) / 2;
  char reply[128];
  std::snprintf(reply, sizeof reply, "ok %.6f %.6f %zu", median, times_ms.front(), n);
  return reply;
}

}  // namespace prism::backend
