// Where a candidate's time goes, kernel by kernel, on the CPU: the candidate's library is
// compiled as the tuner compiles it (kernel_compile_options), run once whole, and then each
// kernel alone (prism_entry_kernels, abi.h) and the whole entry are timed in interleaved rounds,
// beside the cost model's estimate of each (CostEstimate::kernel_seconds).
// What it is for: a multi-kernel family (a prologue, a library matmul, a fused epilogue) that the
// cost model mispredicts says which of its kernels it is wrong about. Run by hand (or by
// scripts/gpu_session.sh's kernels stage on the device machine's processor), never by the tests.
//
//   prism_bench_kernels WORKLOAD CANDIDATE DIM=VALUE... [SIZE=VALUE...] [--dtype f16|bf16|f32]
//                       [--rounds R] [--calls C] [--threads T] [--library-kernels L] [--max-kernels K] [--source FILE]
//
// WORKLOAD names an example (examples/NAME.prism) or a bench program, or is a .prism file (its
// first program: a layer as a user writes it), stored at --dtype (its f16 tensors retyped). The
// sizes (grid sizes and loop ranges, e.g. g1=1 F1=64) are the cost model's choice unless all are
// given; CANDIDATE 0 is the family it ranks first. --source writes the generated C++.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bench/shapes.h"
#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/describe.h"
#include "engine/backend/runner/host_buffer.h"
#include "engine/interp/half.h"
#include "engine/interp/interpreter.h"
#include "engine/workspace/workspace.h"

using namespace prism;
using namespace prism::bench;
using namespace prism::backend::cpu;

namespace {

// An input at its storage dtype, as the ABI takes it (abi.h): f32 as floats, f16 and bf16 as their
// 16 bits. Values are the interpreter's seeded ones, scaled into [-0.25, 0.25] (an f16 attention
// without the max subtraction overflows on wider inputs).
std::vector<char> stored(const Tensor& t) {
  std::vector<char> data(size_t(t.size()) * dtype_bytes(t.dtype));
  for (size_t i = 0; i < t.data.size(); ++i) {
    const float x = 0.25f * t.data[i];
    if (t.dtype == DType::F32) reinterpret_cast<float*>(data.data())[i] = x;
    else reinterpret_cast<uint16_t*>(data.data())[i] = t.dtype == DType::F16 ? f32_to_f16_bits(x) : f32_to_bf16_bits(x);
  }
  return data;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: prism_bench_kernels WORKLOAD CANDIDATE DIM=VALUE... [SIZE=VALUE...] [--dtype f16|bf16|f32] [--rounds R] [--calls C] [--threads T] [--library-kernels L] [--max-kernels K] [--source FILE]\n");
    return 2;
  }
  const std::string workload = argv[1];
  const int candidate = std::atoi(argv[2]);
  std::map<std::string, int64_t> bindings;
  std::string dtype, source_path;
  int rounds = 15, calls = 5, threads = 0;
  SearchLimits limits;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dtype" && i + 1 < argc) dtype = argv[++i];
    else if (a == "--rounds" && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
    else if (a == "--calls" && i + 1 < argc) calls = std::max(1, std::atoi(argv[++i]));
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--source" && i + 1 < argc) source_path = argv[++i];
    else if (a == "--library-kernels" && i + 1 < argc) limits.library_kernels = std::atoi(argv[++i]);
    else if (a == "--max-kernels" && i + 1 < argc) limits.max_kernels = std::atoi(argv[++i]);
    else if (size_t eq = a.find('='); eq != std::string::npos) bindings[a.substr(0, eq)] = std::atoll(a.c_str() + eq + 1);
    else {
      std::fprintf(stderr, "unexpected argument '%s'\n", a.c_str());
      return 2;
    }
  }
  try {
    Workspace ws;
    ws.set_storage("", "");  // no tuning DB: the cost model's sizes
    // A .prism file (a layer of the user's): its first program; else a workload's example.
    std::string program = workload;
    if (workload.size() > 6 && workload.compare(workload.size() - 6, 6, ".prism") == 0) {
      program = open_file(ws, std::filesystem::absolute(workload).string(), dtype);
      ws.search(program, limits);
    } else {
      std::set<std::string> opened;
      open_and_search(ws, opened, workload, limits, dtype);
    }
    // NAME=VALUE: a dim of the program, else one of the family's sizes.
    std::map<std::string, int64_t> sizes;
    const std::vector<std::string>& dims = ws.lowered_program(program).first.dims;
    for (auto it = bindings.begin(); it != bindings.end();)
      if (std::find(dims.begin(), dims.end(), it->first) == dims.end()) sizes.insert(*it), it = bindings.erase(it);
      else ++it;
    const tune::KernelSource k = ws.kernel_source(program, candidate, bindings, backend::cpu::kTarget, sizes.empty() ? nullptr : &sizes);
    if (!source_path.empty()) std::ofstream(source_path) << k.source;  // the generated C++, to read
    const backend::TargetDescription target = describe_cpu();
    if (threads <= 0) threads = target.cores;
    CompiledLibrary built = compile_library(k.source, kernel_compile_options(target));
    LoadedLibrary library(built.path);
    const int kernels = library.function<KernelCountFn>(kKernelCountSymbol)();
    auto run = library.function<EntryKernelsFn>(kEntryKernelsSymbol);
    auto error = library.function<ErrorFn>(kErrorSymbol);

    const Program lowered = ws.lowered_program(program).first;
    // In the runner's buffers (huge pages for large ones): a weight in 4 KiB pages costs a kernel
    // that steps down its rows page walks the tuner never sees.
    std::vector<std::unique_ptr<backend::HostBuffer>> ins, outs;
    std::vector<const void*> in_ptrs;
    std::vector<void*> out_ptrs;
    std::map<std::string, Tensor> by_name;
    for (const Tensor& t : random_inputs(lowered, bindings, 1, &by_name)) {
      const std::vector<char> data = stored(t);
      ins.push_back(std::make_unique<backend::HostBuffer>(data.size()));
      std::memcpy(ins.back()->data(), data.data(), data.size());
      in_ptrs.push_back(ins.back()->data());
    }
    for (int o : lowered.outputs) {
      const Type& type = lowered.value(o).type;
      outs.push_back(std::make_unique<backend::HostBuffer>(size_t(element_count(concrete_shape(type.shape, bindings))) * dtype_bytes(type.dtype)));
      out_ptrs.push_back(outs.back()->data());
    }
    if (run(in_ptrs.data(), out_ptrs.data(), threads, 0, kernels) != 0) throw std::runtime_error(std::string("the candidate failed: ") + error());

    // Part p < kernels: kernel p alone, on what the whole run left; part `kernels`: the entry.
    std::vector<std::vector<double>> ms(size_t(kernels) + 1);
    for (int r = 0; r < rounds; ++r)
      for (int p = 0; p <= kernels; ++p) {
        const int first = p < kernels ? p : 0, last = p < kernels ? p + 1 : kernels;
        const auto t0 = std::chrono::steady_clock::now();
        for (int c = 0; c < calls; ++c) run(in_ptrs.data(), out_ptrs.data(), threads, first, last);
        ms[size_t(p)].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / calls);
      }
    std::printf("%s candidate %d at %s, sizes %s, %s, %d threads on %s\n%s\n", program.c_str(), k.candidate,
                tune::sizes_text(k.bindings).c_str(), tune::sizes_text(k.sizes).c_str(), dtype.empty() ? "declared dtypes" : ("f16 tensors at " + dtype).c_str(), threads,
                target.model.c_str(), k.summary.c_str());
    std::printf("| part | median ms | min ms | share of the entry | predicted ms |\n|---|---|---|---|---|\n");
    const double whole = median(ms.back());
    const std::vector<double>& predicted = k.estimate.kernel_seconds;
    double sum = 0;
    for (int p = 0; p <= kernels; ++p) {
      const double m = median(ms[size_t(p)]);
      if (p < kernels) sum += m;
      const double model = p < kernels ? (size_t(p) < predicted.size() ? predicted[size_t(p)] : 0) : k.estimate.seconds;
      std::printf("| %s | %.4f | %.4f | %.0f%% | %.4f |\n", p < kernels ? ("kernel " + std::to_string(p)).c_str() : "entry (all)", m,
                  *std::min_element(ms[size_t(p)].begin(), ms[size_t(p)].end()), 100 * m / whole, 1e3 * model);
    }
    std::printf("kernels alone sum to %.4f ms (%.0f%% of the entry); medians of %d interleaved rounds of %d calls\n", sum, 100 * sum / whole,
                rounds, calls);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prism_bench_kernels: %s\n", e.what());
    return 1;
  }
}
