// Saturates the term of every bundled example with the tensor axioms and reports the e-graph's
// size, iterations, stop reason and time; then the rate of hash-cons lookups (is this term in the
// e-graph?), the operation pruning performs. A benchmark, not a test: it asserts nothing.
//   build/bin/prism_bench_egraph [--examples DIR] [--nodes N] [--iters N] [--seconds S]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/egraph/axioms.h"
#include "engine/egraph/from_program.h"
#include "engine/egraph/runner.h"
#include "engine/egraph/tensor_lang.h"
#include "engine/ir/lower_composites.h"
#include "engine/lang/compile.h"

using namespace prism;
using namespace prism::eg;
using Clock = std::chrono::steady_clock;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  std::string dir = std::string(PRISM_SOURCE_DIR) + "/examples";
  RunLimits limits{200000, 40, 5.0};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--examples") dir = argv[i + 1];
    else if (a == "--nodes") limits.node_limit = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--iters") limits.iter_limit = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--seconds") limits.time_limit_s = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--examples DIR] [--nodes N] [--iters N] [--seconds S]\n", argv[0]);
      return 2;
    }
  }
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".prism") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());

  std::printf("limits: %zu nodes, %zu iterations, %.1f s\n\n", limits.node_limit, limits.iter_limit, limits.time_limit_s);
  std::printf("%-20s %8s %8s %6s %-16s %9s\n", "program", "nodes", "classes", "iters", "stop", "time_ms");
  std::vector<ENode> probes;
  TensorGraph* last = nullptr;
  std::vector<std::unique_ptr<TensorGraph>> graphs;
  for (const auto& file : files) {
    CompileResult r = compile_text(read_file(file), file);
    for (const Program& p : r.programs) {
      auto tg = std::make_unique<TensorGraph>();
      std::vector<Rewrite> rules = tensor_axioms(*tg);
      add_program(*tg, lower_composites(p));
      Runner runner(&rules);
      auto t0 = Clock::now();
      RunReport rep = runner.run(tg->graph(), limits);
      double ms = seconds_since(t0) * 1e3;
      std::printf("%-20s %8zu %8zu %6zu %-16s %9.1f\n", p.name.c_str(), rep.nodes, rep.classes, rep.iterations, stop_reason_name(rep.stop), ms);
      last = tg.get();
      graphs.push_back(std::move(tg));
    }
  }
  if (!last) return 0;

  // Every program in one e-graph (as the workspace keeps them), with a symbolic split factor F
  // offered for every input dim, so that the split rule fires on every reduction.
  {
    auto tg = std::make_unique<TensorGraph>();
    std::vector<Rewrite> rules = tensor_axioms(*tg);
    for (const auto& file : files) {
      for (const Program& p : compile_text(read_file(file), file).programs) {
        Program lowered = lower_composites(p);
        add_program(*tg, lowered);
        for (int id : lowered.inputs) {
          Id x = tg->input(lowered.value(id).name, lowered.value(id).type.shape);
          for (size_t a = 0; a < tg->rank(x); ++a) tg->splitax(int(a), Dim::symbol("F"), x);
        }
      }
    }
    Runner runner(&rules);
    auto t0 = Clock::now();
    RunReport rep = runner.run(tg->graph(), limits);
    double ms = seconds_since(t0) * 1e3;
    std::printf("%-20s %8zu %8zu %6zu %-16s %9.1f\n", "all, split by F", rep.nodes, rep.classes, rep.iterations, stop_reason_name(rep.stop), ms);
    last = tg.get();
    graphs.push_back(std::move(tg));
  }

  // Lookups: every term node as it was added (children not yet canonical), on the largest graph.
  TensorGraph* big = last;
  for (auto& g : graphs)
    if (g->graph().num_nodes() > big->graph().num_nodes()) big = g.get();
  const EGraph& g = big->graph();
  for (Id i = 0; i < g.num_ids(); ++i) probes.push_back(g.id_node(i));
  // Misses too: the same nodes with a different axis.
  for (Id i = 0; i < g.num_ids(); i += 2) {
    ENode n = g.id_node(i);
    n.axis = int16_t(n.axis + 7);
    probes.push_back(n);
  }
  size_t found = 0, lookups = 0;
  auto t0 = Clock::now();
  while (seconds_since(t0) < 1.0)
    for (const ENode& n : probes) {
      found += g.lookup(n) != kNoId;
      ++lookups;
    }
  double s = seconds_since(t0);
  std::printf("\nhash-cons lookups: %zu in %.2f s on an e-graph of %zu nodes = %.2f million/s (%.0f%% hits)\n", lookups, s, g.num_nodes(),
              double(lookups) / s / 1e6, 100.0 * double(found) / double(lookups));
  return 0;
}
