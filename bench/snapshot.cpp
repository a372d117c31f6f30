// What a refactor of the backends or the cost model must leave unchanged, printed as text to diff
// before and after (docs/architecture.md, "Checking a refactor"): for the seven examples and the
// example layers at their small bindings, on fixed machine descriptions (an AVX2 CPU, an AVX-512
// CPU with AMX, the H100's data sheet), the roofline, the cost model's ranking of every family's
// instantiations, and digests of the sources generated for the first ones and of the eager
// baseline.
//
//   prism_snapshot > before.txt   (then, after the change)   prism_snapshot | diff before.txt -
//   prism_snapshot DIR            also writes every source whose digest it prints to DIR/DIGEST
//
// Run it on an otherwise idle machine: a proof that passes the prover's time limit leaves its
// family out, and the lists differ for that reason alone.
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "../tests/engine/search/search_helpers.h"
#include "engine/backend/cuda/describe.h"
#include "engine/backend/cpu/cpu_features.h"
#include "engine/sgraph/print.h"
#include "engine/tune/backends.h"
#include "engine/tune/cost_model.h"
#include "engine/tune/roofline.h"
#include "engine/tune/tuner.h"
#include "engine/tune/tuner_steps.h"

using namespace prism;

namespace {

std::string source_dir;  // argv[1]: where the sources go, or "" for none

uint64_t digest(const std::string& text) {  // FNV-1a: stable across runs and machines
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

void keep(const std::string& source) {
  if (source_dir.empty()) return;
  char name[32];
  std::snprintf(name, sizeof name, "/%016" PRIx64, digest(source));
  std::ofstream(source_dir + name) << source;
}

backend::TargetDescription avx2_cpu() {
  backend::TargetDescription t;
  t.target = backend::cpu::kTarget;
  t.model = "snapshot AVX2, 2 cores";
  t.cores = 2;
  t.l1_bytes = 32 << 10, t.l2_bytes = 512 << 10, t.l3_bytes = 32 << 20;
  backend::cpu::cpu_features(t) = {.simd_bytes = 32, .widen_f16_gflops = 110, .widen_bf16_gflops = 120};
  t.bandwidth_gbs = 20, t.cache_bandwidth_gbs = 120, t.peak_gflops = 150;
  t.fast_memory_bytes = t.l2_bytes / 2;
  t.read_curve = {{1 << 20, 160}, {8 << 20, 110}, {32 << 20, 50}, {256 << 20, 20}};
  return t;
}

backend::TargetDescription amx_cpu() {
  backend::TargetDescription t = avx2_cpu();
  t.model = "snapshot AVX-512 with AMX, 8 cores";
  t.cores = 8;
  t.l1_bytes = 48 << 10, t.l2_bytes = 2 << 20, t.l3_bytes = 105 << 20;
  backend::cpu::cpu_features(t) = {.simd_bytes = 64,
                           .bf16_dot_gflops = 1500,
                           .bf16_dot_peak_gflops = 1500,
                           .bf16_amx_gflops = 6000,
                           .widen_f16_gflops = 700,
                           .widen_bf16_gflops = 800};
  t.bandwidth_gbs = 60, t.cache_bandwidth_gbs = 400, t.peak_gflops = 1200;
  t.fast_memory_bytes = t.l2_bytes / 2;
  t.read_curve = {{4 << 20, 600}, {64 << 20, 250}, {512 << 20, 60}};
  return t;
}

void print_roofline(const Program& lowered, const DimBindings& dims, const backend::TargetDescription& t) {
  const tune::Roofline r = tune::program_roofline(lowered, dims, t);
  std::printf("  roofline %s: bytes %.17g flops %.17g memory %.17g compute %.17g bw %.17g %s %s\n", t.model.c_str(), r.compulsory_bytes,
              r.flops, r.memory_s, r.compute_s, r.bandwidth_gbs, r.level.c_str(), r.bound.c_str());
}

void print_ranking(const Program& lowered, const std::vector<Candidate>& candidates, const DimBindings& dims,
                   const backend::TargetDescription& t) {
  const backend::Backend& backend = tune::backend_for(t.target);
  std::vector<sgraph::SGraph> stored;
  for (const Candidate& c : candidates) stored.push_back(backend.stored(*c.graph));
  const std::vector<tune::steps::Option> ranked = tune::steps::rank_options(stored, dims, t, nullptr);
  std::printf("  ranking %s: %zu options\n", t.model.c_str(), ranked.size());
  for (size_t i = 0; i < ranked.size(); ++i) {
    const tune::steps::Option& o = ranked[i];
    const tune::CostEstimate e = tune::estimate_cost(o.instance(), t);
    std::printf("    %zu family %zu %s: %.17g mem %.17g cache %.17g scratch %.17g flops %.17g blocks %" PRId64 " eff %.17g %s", i, o.family,
                tune::sizes_text({o.sizes.begin(), o.sizes.end()}).c_str(), e.seconds, e.memory_bytes, e.cache_bytes, e.scratch_bytes, e.flops,
                e.blocks, e.parallel_efficiency, e.bound.c_str());
    for (double k : e.kernel_seconds) std::printf(" k %.17g", k);
    if (i < 12) {
      const backend::Build b = backend.generate(o.instance(), t, {});
      std::printf(" source %016" PRIx64 "%s", digest(b.source), b.error.empty() ? "" : (" error " + b.error).c_str());
      keep(b.source);
    }
    std::printf("\n");
  }
  const backend::Build eager = backend.eager(backend.stored(lowered), dims);
  keep(eager.source);
  std::printf("  eager %s: %016" PRIx64 " %s\n", t.model.c_str(), digest(eager.source), eager.error.c_str());
}

void snapshot(const std::string& name, const std::string& text, const DimBindings& dims) {
  std::printf("%s %s\n", name.c_str(), tune::sizes_text({dims.begin(), dims.end()}).c_str());
  const Program lowered = test::lowered_text(text, name.substr(0, name.find(' ')));
  SearchLimits limits;
  limits.budget_s = 600;  // every family, however busy the machine
  const SearchResult found = search::search_program(lowered, limits);
  std::printf("  %zu families\n", found.candidates.size());
  for (const Candidate& c : found.candidates)
    std::printf("  family %d: %s; %016" PRIx64 "\n", c.id, c.summary.c_str(), digest(sgraph::print(*c.graph)));
  for (const backend::TargetDescription& t : {avx2_cpu(), amx_cpu(), backend::cuda::cuda_h100_data()}) {
    print_roofline(lowered, dims, t);
    print_ranking(lowered, found.candidates, dims, t);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) source_dir = argv[1];
  for (const auto& [name, dims] : test::small_example_dims()) snapshot(name, test::example_text(name), dims);
  // The CPU's 16-bit and f32 rules (AMX from 12 rows, vdpbf16ps, sgemm) on MLPs of 16 rows.
  for (const char* name : {"rms_linear", "gated_mlp", "rmsnorm_mlp"})
    for (const char* dtype : {"bf16", "f32", "f16"})
      snapshot(std::string(name) + " at " + dtype, test::retyped(test::example_text(name), "f16", dtype), {{"n", 16}, {"d", 256}});
  for (const test::ExampleLayer& layer : test::example_layers()) snapshot(layer.name, test::layer_text(layer.name), layer.small);
  return 0;
}
