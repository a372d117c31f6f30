// prism-runner's side of engine/backend/runner/runner.h. Commands, one per line:
//   inputs N SIZE_1 … SIZE_N PATH            read N dense f32 tensors from PATH        → ok
//   run THREADS WARMUP MIN MAX MIN_S K SIZE_1 … SIZE_K OUT_PATH \t LIBRARY
//        load LIBRARY, call it once and write its K outputs to OUT_PATH, then warm up and time it
//                                                                    → ok MEDIAN_MS MIN_MS RUNS
//        (OUT_PATH "-": a timing round; the outputs are not written)
//   cuda WARMUP RUNS OUT_PATH \t PLAN_PATH
//        run a CUDA plan (engine/backend/cuda/plan.h) on the inputs, write its outputs as f32
//        to OUT_PATH, time it with CUDA events (engine/backend/cuda/run_worker.h)
//                                                                    → ok MEDIAN_MS MIN_MS RUNS
// Any failure the worker survives answers "error MESSAGE"; a kernel that crashes takes the
// worker with it, which is the point of running it here.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/compiler.h"
#include "runner/worker.h"
#include "engine/backend/cuda/run_worker.h"

namespace prism::runner {

namespace {

// 64-byte aligned f32 buffers, as a vectorized kernel likes them. Large ones are 2 MiB aligned
// and asked to be backed by huge pages (where transparent huge pages are on "madvise"), so a
// kernel streaming a large weight matrix is not limited by 4 KiB page walks; the eager baseline
// reads the same buffers, so the comparison stays fair.
struct Buffer {
  float* data = nullptr;
  int64_t size = 0;
  explicit Buffer(int64_t n) : size(n) {
    constexpr size_t kHuge = size_t(2) << 20;
    size_t bytes = static_cast<size_t>((n * 4 + 63) / 64 * 64 + 64);
    size_t align = bytes >= 2 * kHuge ? kHuge : 64;
    bytes = (bytes + align - 1) / align * align;
    data = static_cast<float*>(std::aligned_alloc(align, bytes));
    if (!data) throw std::runtime_error("out of memory for " + std::to_string(n) + " floats");
    if (align == kHuge) ::madvise(data, bytes, MADV_HUGEPAGE);
  }
  ~Buffer() { std::free(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

struct State {
  std::vector<std::unique_ptr<Buffer>> inputs;
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
  for (int64_t s : sizes) {
    state.inputs.push_back(std::make_unique<Buffer>(s));
    in.read(reinterpret_cast<char*>(state.inputs.back()->data), static_cast<std::streamsize>(s * 4));
  }
  return in ? "" : "the inputs file " + path + " is shorter than its tensors";
}

std::string run(State& state, std::istringstream& args) {
  int threads = 1, warmup = 0, min_runs = 1, max_runs = 1;
  double min_time_s = 0;
  size_t k = 0;
  args >> threads >> warmup >> min_runs >> max_runs >> min_time_s >> k;
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
  std::vector<const float*> ins;
  for (const auto& b : state.inputs) ins.push_back(b->data);
  std::vector<std::unique_ptr<Buffer>> outs;
  std::vector<float*> out_ptrs;
  for (int64_t s : sizes) {
    outs.push_back(std::make_unique<Buffer>(s));
    std::fill(outs.back()->data, outs.back()->data + s, std::nanf(""));  // an unwritten output shows
    out_ptrs.push_back(outs.back()->data);
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
    for (const auto& b : outs) out.write(reinterpret_cast<const char*>(b->data), static_cast<std::streamsize>(b->size * 4));
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
  for (const auto& b : state.inputs) inputs.push_back({b->data, b->size});
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
