// Search time and counts per workload (docs/design.md §8), per layer of examples/layers and per
// chain of k residual blocks ("chain3": docs/search.md, "Block cuts"), with 1 and 2 threads,
// default bounds.
// Run by scripts/bench.sh, never by the tests.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/ir/lower_composites.h"
#include "engine/lang/compile.h"
#include "engine/search/search.h"

using namespace prism;

// k blocks H_i = silu(rms_norm(H_(i-1)) @ W_i) + H_(i-1), as a pre-norm decoder chains them.
static std::string chain_text(int k) {
  std::string text = "program chain" + std::to_string(k) + "(H0: f32[n, d]";
  for (int i = 1; i <= k; ++i) text += ", W" + std::to_string(i) + ": f32[d, d]";
  text += ") {\n";
  for (int i = 1; i <= k; ++i)
    text += "  H" + std::to_string(i) + " = silu(rms_norm(H" + std::to_string(i - 1) + ", eps=1e-6) @ W" + std::to_string(i) + ") + H" +
            std::to_string(i - 1) + "\n";
  return text + "  return H" + std::to_string(k) + "\n}\n";
}

static Program load(const std::string& name) {
  if (name.rfind("chain", 0) == 0) {
    for (const auto& p : compile_text(chain_text(std::stoi(name.substr(5))), name + ".prism").programs) return lower_composites(p);
  }
  const std::string dir = std::string(PRISM_SOURCE_DIR) + "/examples/";
  std::ifstream in(std::filesystem::exists(dir + name + ".prism") ? dir + name + ".prism" : dir + "layers/" + name + ".prism");
  std::stringstream ss;
  ss << in.rdbuf();
  for (const auto& p : compile_text(ss.str(), name + ".prism").programs)
    if (p.name == name) return lower_composites(p);
  throw std::runtime_error("no program " + name);
}

// Arguments: workloads to run (default: all), e.g. `prism_bench_search attention gqa`.
int main(int argc, char** argv) {
  std::vector<std::string> names = {"rms_linear", "rmsnorm_mlp", "gated_mlp", "attention", "qk_norm_attention", "lora", "gqa"};
  std::vector<std::string> layers;
  for (const auto& e : std::filesystem::directory_iterator(std::string(PRISM_SOURCE_DIR) + "/examples/layers"))
    if (e.path().extension() == ".prism") layers.push_back(e.path().stem().string());
  std::sort(layers.begin(), layers.end());
  names.insert(names.end(), layers.begin(), layers.end());
  for (const char* chain : {"chain1", "chain2", "chain3", "chain4", "chain8"}) names.push_back(chain);
  if (argc > 1) names.assign(argv + 1, argv + argc);
  std::printf("%-18s %7s %7s %8s %8s %8s %8s %5s %4s %4s %8s %8s %7s\n", "workload", "t1_s", "t2_s", "speedup", "generated", "pruned", "families",
              "dups", "ver", "rej", "verify_s", "sat_s", "stop");
  for (const std::string& name : names) {
    const Program p = load(name);
    double best[2] = {1e9, 1e9};
    SearchResult last;
    for (int rep = 0; rep < 3; ++rep)
      for (int t = 1; t <= 2; ++t) {
        SearchLimits limits;
        limits.threads = t;
        SearchResult r = search::search_program(p, limits);
        best[t - 1] = std::min(best[t - 1], r.stats.total_s);
        last = r;
      }
    const SearchStats& s = last.stats;
    const uint64_t pruned = s.pruned_expression + s.pruned_dims + s.pruned_structure + s.pruned_hardware;
    std::printf("%-18s %7.3f %7.3f %8.2f %8llu %8llu %8llu %5llu %4llu %4llu %8.3f %8.4f %7s\n", name.c_str(), best[0], best[1], best[0] / best[1],
                (unsigned long long)s.generated, (unsigned long long)pruned, (unsigned long long)s.families, (unsigned long long)s.duplicates,
                (unsigned long long)s.verified, (unsigned long long)s.rejected, s.verify_s, s.saturate_s, search_stop_name(s.stop_reason));
  }
}
