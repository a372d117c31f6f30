// docs/design.md §8's workloads and shapes, shared by the tuning benchmarks (bench_tune.cpp on the
// CPU, bench_tune_gpu.cpp on the GPU).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/tune/backends.h"
#include "engine/tune/measurements.h"
#include "engine/workspace/workspace.h"

namespace prism::bench {

struct Shape {
  const char* workload;
  std::map<std::string, int64_t> bindings;
};

// The middle of `v` (the mean of the two middle values for an even count), 0 when empty.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

inline std::string read(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot read " + path);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  return text;
}

inline std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (const char* w : {"rms_linear", "rmsnorm_mlp", "gated_mlp"})
    for (auto [n, d] : std::vector<std::pair<int64_t, int64_t>>{{8, 1024}, {8, 2048}, {8, 4096}, {16, 1024}, {16, 4096}})
      out.push_back({w, {{"n", n}, {"d", d}}});
  // (batch, heads, q, s, e) with B = batch * heads.
  for (const char* w : {"attention", "qk_norm_attention"})
    for (auto [b, q] : std::vector<std::pair<int64_t, int64_t>>{{16, 1}, {16, 128}, {64, 1}, {32, 1}})
      out.push_back({w, {{"B", b}, {"q", q}, {"s", 1024}, {"e", 128}}});
  out.push_back({"lora", {{"n", 16}, {"d", 256}, {"o", 4096}, {"r", 16}}});
  out.push_back({"gqa", {{"h", 2}, {"g", 256}, {"e", 64}, {"s", 4096}}});
  return out;
}

// The GPU table's extra shapes: Mirage issue #658's rms_norm(2, 4096) @ W(4096, 6144) (issue 16);
// issue 48's targets: Llama-3-8B's SwiGLU feed-forward at 8 tokens (examples/layers, nn.Linear
// weights) and decode attention over 4096 and 8192 cached keys (32 heads of 128).
inline std::vector<Shape> gpu_shapes() {
  std::vector<Shape> out = shapes();
  out.push_back({"rms_proj", {{"n", 2}, {"d", 4096}, {"o", 6144}}});
  out.push_back({"swiglu_ffn", {{"n", 8}, {"d", 4096}, {"h", 14336}}});
  for (int64_t s : {4096, 8192}) out.push_back({"attention", {{"B", 32}, {"q", 1}, {"s", s}, {"e", 128}}});
  return out;
}

// Opens the program file at `path` (absolute) with its declared f16 and f32 tensors stored at
// `dtype` when one is given, and opens it in `ws`; returns the name of the first program it defines.
inline std::string open_file(Workspace& ws, const std::string& path, const std::string& dtype = "") {
  std::string text = read(path);
  if (!dtype.empty())
    for (const char* declared : {"f16[", "f32["})
      for (size_t at = 0; (at = text.find(declared, at)) != std::string::npos; at += dtype.size())
        if (at == 0 || text[at - 1] != 'b') text.replace(at, 3, dtype);  // not bf16[
  const DocumentState state = ws.open("file://" + path, text, 1);
  if (state.programs.empty()) throw std::runtime_error(path + " defines no program that compiles");
  return state.programs.front();
}

// Opens and searches `workload` the first time it is asked for (its file in examples/,
// examples/layers/ or the bench's own bench/programs/; `limits`), with its declared f16 and f32
// tensors stored at `dtype` when one is given; returns the search's seconds, 0 when it was already open.
inline double open_and_search(Workspace& ws, std::set<std::string>& opened, const std::string& workload, const SearchLimits& limits,
                              const std::string& dtype = "") {
  if (!opened.insert(workload).second) return 0;
  std::string path;
  for (const char* dir : {"/examples/", "/examples/layers/", "/bench/programs/"}) {
    path = std::string(PRISM_SOURCE_DIR) + dir + workload + ".prism";
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      std::fclose(f);
      break;
    }
  }
  open_file(ws, path, dtype);
  auto t0 = std::chrono::steady_clock::now();
  ws.search(workload, limits);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The tuning benches' command line: workload names to restrict to, --top K (default 8), --csv
// FILE (every timed row appended as measurements: engine/tune/measurements.h).
struct Args {
  std::set<std::string> only;
  int top = 8;
  std::string csv;
};

inline Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--top") && i + 1 < argc) a.top = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc) a.csv = argv[++i];
    else a.only.insert(argv[i]);
  }
  return a;
}

// Appends `result`'s rows to the measurements file `path` (its header first when the file is new
// or empty); nothing when `path` is empty. The families are the workload's search result in `ws`.
inline void record_measurements(const Workspace& ws, const tune::TuneResult& result, const std::string& path) {
  if (path.empty() || result.from_db) return;
  const std::optional<SearchResult> search = ws.search_result(result.program);
  if (!search) return;
  const std::vector<tune::StoredRow> rows =
      tune::measurements(result, search->candidates, tune::backend_for(result.target), ws.described(result.target));
  FILE* f = std::fopen(path.c_str(), "ab");
  if (!f) throw std::runtime_error("cannot write " + path);
  const std::string text = (std::ftell(f) == 0 ? tune::measurements_header() : "") + tune::measurements_csv(rows);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

}  // namespace prism::bench
