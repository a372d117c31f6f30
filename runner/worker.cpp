// prism-runner's side of engine/backend/runner/runner.h. Commands, one per line:
//   inputs N SIZE_1 … SIZE_N PATH            read N dense f32 tensors from PATH        → ok
//   run THREADS WARMUP MIN MAX MIN_S STORAGE K SIZE_1 … SIZE_K OUT_PATH \t LIBRARY
//        load LIBRARY, call it once and write its K outputs to OUT_PATH as f32, then warm up and
//        time it                                                     → ok MEDIAN_MS MIN_MS RUNS
//        (OUT_PATH "-": a timing round; the outputs are not written). STORAGE is "-" (every
//        tensor f32) or "IN/OUT", comma lists of the inputs' and outputs' dtypes ("bf16,f32/bf16"):
//        an input is handed over converted (once per dtype, rounded to nearest even), an output
//        is allocated at its dtype and widened to f32 when written.
//   cuda WARMUP RUNS OUT_PATH \t PLAN_PATH
//        run a CUDA plan (engine/backend/cuda/plan.h) on the inputs, write its outputs as f32
//        to OUT_PATH, time it with CUDA events (engine/backend/cuda/run_worker.h)
//                                                                    → ok MEDIAN_MS MIN_MS RUNS
// Any failure the worker survives answers "error MESSAGE"; a kernel that crashes takes the
// worker with it, which is the point of running it here.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cpu/host_buffer.h"
#include "engine/interp/half.h"
#include "engine/ir/dtype.h"
#include "runner/worker.h"
#include "engine/backend/cuda/run_worker.h"

namespace prism::runner {

namespace {

// A tensor's buffer (engine/backend/cpu/host_buffer.h: 64-byte aligned, large ones in huge pages);
// the eager baseline reads the same buffers, so the comparison stays fair.
struct Buffer {
  int64_t size = 0;  // elements
  DType dtype = DType::F32;
  std::unique_ptr<backend::cpu::HostBuffer> memory;
  void* data = nullptr;
  Buffer(int64_t n, DType type) : size(n), dtype(type) {
    try {
      memory = std::make_unique<backend::cpu::HostBuffer>(static_cast<size_t>(n * dtype_bytes(type)));
    } catch (const std::bad_alloc&) {
      throw std::runtime_error("out of memory for " + std::to_string(n) + " elements");
    }
    data = memory->data();
  }
  float* f32() const { return static_cast<float*>(data); }
  uint16_t* bits() const { return static_cast<uint16_t*>(data); }
};

// A copy of f32 `from` at `dtype`, rounded to nearest even.
std::unique_ptr<Buffer> narrowed(const Buffer& from, DType dtype) {
  auto out = std::make_unique<Buffer>(from.size, dtype);
  for (int64_t i = 0; i < from.size; ++i)
    out->bits()[i] = dtype == DType::F16 ? f32_to_f16_bits(from.f32()[i]) : f32_to_bf16_bits(from.f32()[i]);
  return out;
}

float widened(const Buffer& b, int64_t i) {
  switch (b.dtype) {
    case DType::F16: return f16_bits_to_f32(b.bits()[i]);
    case DType::BF16: return bf16_bits_to_f32(b.bits()[i]);
    case DType::F32: break;
  }
  return b.f32()[i];
}

struct State {
  std::vector<std::unique_ptr<Buffer>> inputs;                      // f32, as the tuner wrote them
  std::map<std::pair<size_t, DType>, std::unique_ptr<Buffer>> narrow;  // inputs converted for a kernel
};

std::string take_inputs(State& state, std::istringstream& args) {
  size_t n = 0;
  args >> n;
  std::vector<int64_t> sizes(n);
  for (auto& s : sizes) args >> s;
  std::string path;
  args >> std::ws;
  std::getline(args, path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read " + path;
  state.inputs.clear();
  state.narrow.clear();
  for (int64_t s : sizes) {
    state.inputs.push_back(std::make_unique<Buffer>(s, DType::F32));
    in.read(static_cast<char*>(state.inputs.back()->data), static_cast<std::streamsize>(s * 4));
  }
  return in ? "" : "the inputs file " + path + " is shorter than its tensors";
}

// "bf16,f32" → its dtypes; throws on a name that is none.
std::vector<DType> dtype_list(const std::string& text) {
  std::vector<DType> out;
  std::istringstream in(text);
  for (std::string name; std::getline(in, name, ',');) {
    std::optional<DType> t = parse_dtype(name);
    if (!t) throw std::runtime_error("unknown dtype '" + name + "' in a run command");
    out.push_back(*t);
  }
  return out;
}

std::string run(State& state, std::istringstream& args) {
  int threads = 1, warmup = 0, min_runs = 1, max_runs = 1;
  double min_time_s = 0;
  size_t k = 0;
  std::string storage;
  args >> threads >> warmup >> min_runs >> max_runs >> min_time_s >> storage >> k;
  std::vector<DType> in_types(state.inputs.size(), DType::F32), out_types(k, DType::F32);
  if (storage != "-") {
    const size_t slash = storage.find('/');
    if (slash == std::string::npos) return "error malformed storage '" + storage + "'";
    in_types = dtype_list(storage.substr(0, slash));
    out_types = dtype_list(storage.substr(slash + 1));
    if (in_types.size() != state.inputs.size() || out_types.size() != k) return "error the storage does not name every tensor";
  }
  std::vector<int64_t> sizes(k);
  for (auto& s : sizes) args >> s;
  std::string rest;
  args >> std::ws;
  std::getline(args, rest);
  auto tab = rest.find('\t');
  if (tab == std::string::npos) return "error malformed run command";
  std::string out_path = rest.substr(0, tab), library = rest.substr(tab + 1);

  backend::cpu::LoadedLibrary lib(library);
  auto entry = lib.function<backend::cpu::EntryFn>(backend::cpu::kEntrySymbol);
  backend::cpu::ErrorFn error = nullptr;
  try {
    error = lib.function<backend::cpu::ErrorFn>(backend::cpu::kErrorSymbol);
  } catch (const std::exception&) {
  }
  std::vector<const void*> ins;
  for (size_t i = 0; i < state.inputs.size(); ++i) {
    if (in_types[i] == DType::F32) {
      ins.push_back(state.inputs[i]->data);
      continue;
    }
    auto& copy = state.narrow[{i, in_types[i]}];
    if (!copy) copy = narrowed(*state.inputs[i], in_types[i]);
    ins.push_back(copy->data);
  }
  std::vector<std::unique_ptr<Buffer>> outs;
  std::vector<void*> out_ptrs;
  for (size_t o = 0; o < k; ++o) {
    outs.push_back(std::make_unique<Buffer>(sizes[o], out_types[o]));
    Buffer& b = *outs.back();
    // NaN everywhere, so that an unwritten output shows.
    if (b.dtype == DType::F32) std::fill(b.f32(), b.f32() + b.size, std::nanf(""));
    else std::fill(b.bits(), b.bits() + b.size, uint16_t(b.dtype == DType::F16 ? 0x7e00 : 0x7fc0));
    out_ptrs.push_back(b.data);
  }
  auto call = [&]() -> std::string {
    int rc = entry(ins.data(), out_ptrs.data(), threads);
    if (rc == 0) return "";
    std::string why = error ? error() : "";
    return "error the kernel returned " + std::to_string(rc) + (why.empty() ? "" : ": " + why);
  };
  if (auto e = call(); !e.empty()) return e;
  if (out_path != "-") {
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    for (const auto& b : outs) {
      if (b->dtype == DType::F32) {
        out.write(static_cast<const char*>(b->data), static_cast<std::streamsize>(b->size * 4));
        continue;
      }
      std::vector<float> wide(static_cast<size_t>(b->size));
      for (int64_t i = 0; i < b->size; ++i) wide[size_t(i)] = widened(*b, i);
      out.write(reinterpret_cast<const char*>(wide.data()), static_cast<std::streamsize>(wide.size() * 4));
    }
    if (!out) return "error cannot write the outputs to " + out_path;
  }
  for (int i = 0; i < warmup; ++i)
    if (auto e = call(); !e.empty()) return e;
  std::vector<double> times;
  auto begin = std::chrono::steady_clock::now();
  while (int(times.size()) < max_runs &&
         (int(times.size()) < min_runs || std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() < min_time_s)) {
    auto t0 = std::chrono::steady_clock::now();
    if (auto e = call(); !e.empty()) return e;
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted.size() % 2 ? sorted[sorted.size() / 2] : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  char reply[128];
  std::snprintf(reply, sizeof reply, "ok %.6f %.6f %zu", median, sorted.front(), sorted.size());
  return reply;
}

std::string run_cuda(State& state, std::istringstream& args) {
  int warmup = 0, runs = 1;
  args >> warmup >> runs;
  std::string rest;
  args >> std::ws;
  std::getline(args, rest);
  auto tab = rest.find('\t');
  if (tab == std::string::npos) return "error malformed cuda command";
  std::vector<backend::cuda::HostInput> inputs;
  for (const auto& b : state.inputs) inputs.push_back({b->f32(), b->size});
  return backend::cuda::run_cuda_plan(rest.substr(tab + 1), rest.substr(0, tab), inputs, warmup, runs);
}

}  // namespace

int serve_runner(int in_fd, int out_fd) {
  FILE* in = ::fdopen(in_fd, "r");
  if (!in) return 2;
  State state;
  char* buf = nullptr;
  size_t cap = 0;
  while (::getline(&buf, &cap, in) > 0) {
    std::string line(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    std::istringstream args(line);
    std::string command;
    args >> command;
    std::string reply;
    try {
      if (command == "inputs") {
        std::string e = take_inputs(state, args);
        reply = e.empty() ? "ok" : "error " + e;
      } else if (command == "run") {
        reply = run(state, args);
      } else if (command == "cuda") {
        reply = run_cuda(state, args);
      } else {
        reply = "error unknown command '" + command + "'";
      }
    } catch (const std::exception& e) {
      reply = std::string("error ") + e.what();
    }
    std::replace(reply.begin(), reply.end(), '\n', ' ');
    reply += "\n";
    if (::write(out_fd, reply.data(), reply.size()) != static_cast<ssize_t>(reply.size())) break;
  }
  std::free(buf);
  return 0;
}

}  // namespace prism::runner
