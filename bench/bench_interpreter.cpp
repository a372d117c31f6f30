// Times the reference interpreter on every bundled example at the sizes of docs/design.md §8.
// A benchmark, not a test: it prints a table and asserts nothing.
//   build/bin/prism_bench_interpreter [--repeat N] [--examples DIR]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/workspace/workspace.h"

namespace {

struct Case {
  std::string program;
  std::map<std::string, int64_t> bindings;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  const std::pair<int64_t, int64_t> nd[] = {{8, 1024}, {8, 2048}, {8, 4096}, {16, 1024}, {16, 4096}};
  for (const char* p : {"rms_linear", "rmsnorm_mlp", "gated_mlp"})
    for (auto [n, d] : nd) out.push_back({p, {{"n", n}, {"d", d}}});
  // (batch, heads, q, s, e) with B = batch * heads.
  const int64_t attn[][5] = {{2, 8, 1, 1024, 128}, {2, 8, 128, 1024, 128}, {2, 32, 1, 1024, 128}, {4, 8, 1, 1024, 128}};
  for (const char* p : {"attention", "qk_norm_attention"})
    for (auto& a : attn) out.push_back({p, {{"B", a[0] * a[1]}, {"q", a[2]}, {"s", a[3]}, {"e", a[4]}}});
  out.push_back({"lora", {{"n", 16}, {"d", 256}, {"o", 4096}, {"r", 16}}});
  out.push_back({"gqa", {{"h", 2}, {"g", 256}, {"e", 64}, {"s", 4096}}});
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  std::string dir = PRISM_SOURCE_DIR "/examples";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--repeat") repeat = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--examples") dir = argv[i + 1];
  }
  prism::Workspace ws;
  std::printf("%-18s %-34s %12s %12s\n", "program", "bindings", "median ms", "min ms");
  for (const auto& c : cases()) {
    std::string path = dir + "/" + c.program + ".prism";
    ws.open(path, read_file(path), 1);
    prism::RunRequest req;
    req.program = c.program;
    req.bindings = c.bindings;
    std::vector<double> times;
    for (int r = 0; r < repeat; ++r) times.push_back(ws.run(req).elapsed_ms);
    std::sort(times.begin(), times.end());
    std::string binds;
    for (const auto& [k, v] : c.bindings) binds += k + "=" + std::to_string(v) + " ";
    std::printf("%-18s %-34s %12.2f %12.2f\n", c.program.c_str(), binds.c_str(), times[times.size() / 2], times[0]);
    std::fflush(stdout);
  }
}
