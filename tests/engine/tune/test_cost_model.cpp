// The cost model ranks instances of hand-written families without running them.
#include <catch2/catch.hpp>

#include <algorithm>

#include "engine/sgraph/families.h"
#include "engine/sgraph/parse.h"
#include "engine/sgraph/tail_groups.h"
#include "engine/backend/cpu/emit_ops.h"
#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cuda/cost_rules.h"
#include "engine/backend/cuda/describe.h"
#include "engine/backend/cuda/gpu_features.h"
#include "engine/backend/storage.h"
#include "engine/tune/backends.h"
#include "engine/tune/cost_model.h"

using namespace prism;
using namespace prism::tune;
using backend::TargetDescription;
using backend::cuda::cuda_h100_data;
namespace fam = prism::test::families;

namespace {

// A fixed four-core machine, so the ranking does not depend on where the test runs.
TargetDescription four_cores() {
  TargetDescription t;
  t.cores = 4;
  backend::cpu::cpu_features(t).simd_bytes = 32;
  t.bandwidth_gbs = 20;
  t.peak_gflops = 400;
  t.l2_bytes = 2 << 20;
  t.fast_memory_bytes = 1 << 20;
  return t;
}

// The H100 with its peaks scaled down 1000x, so that compute decides the estimate.
TargetDescription compute_bound_h100() {
  TargetDescription gpu = cuda_h100_data();
  gpu.peak_gflops /= 1000;
  backend::cuda::gpu_features(gpu).tensor_peak_gflops /= 1000;
  return gpu;
}

// A family as the CPU backend stores it (every tensor f32), for the CPU-like targets above.
sgraph::SGraph cpu_family(const std::string& text) { return backend::with_storage(sgraph::parse(text), DType::F32); }

struct Ranked {
  DimBindings sizes;
  CostEstimate cost;
};

std::vector<Ranked> rank(const sgraph::SGraph& g, const DimBindings& dims, const TargetDescription& t) {
  std::vector<Ranked> out;
  for (const DimBindings& sizes : sgraph::enumerate(g, dims, t.tile_budget()))
    out.push_back({sizes, estimate_cost(sgraph::instantiate(g, dims, sizes, t.tile_budget()), t)});
  std::sort(out.begin(), out.end(), [](const Ranked& a, const Ranked& b) { return a.cost.seconds < b.cost.seconds; });
  return out;
}

}  // namespace

TEST_CASE("cost model: one block on four cores and a thousand one-column blocks rank below a good grid", "[tune][cost]") {
  TargetDescription t = four_cores();
  sgraph::SGraph g = cpu_family(fam::kRmsLinear);
  DimBindings dims{{"n", 16}, {"d", 1024}};
  std::vector<Ranked> ranked = rank(g, dims, t);
  REQUIRE(ranked.size() > 10);
  const Ranked& best = ranked.front();
  INFO("best g1=" << best.sizes.at("g1") << " F1=" << best.sizes.at("F1") << ": " << best.cost.seconds * 1e6 << " us, "
                  << best.cost.bound);
  CHECK(best.sizes.at("g1") >= t.cores);
  CHECK(best.sizes.at("g1") < 1024);
  CHECK(best.cost.parallel_efficiency == 1);
  CHECK(best.cost.kernels == 1);
  // Every instance reads X and W and writes O from memory at least once (f32 on the CPU).
  const double compulsory = (16 * 1024 + 1024 * 1024 + 16 * 1024) * 4.0;
  for (const Ranked& r : ranked) CHECK(r.cost.memory_bytes >= compulsory);

  auto cost = [&](int64_t g1, int64_t f1) {
    return estimate_cost(sgraph::instantiate(g, dims, {{"g1", g1}, {"F1", f1}}, t.tile_budget()), t);
  };
  // (F1 = 16: every grid fits its tiles at that loop range.)
  CostEstimate one_block = cost(1, 16);
  CHECK(one_block.parallel_efficiency == 0.25);
  CHECK(one_block.blocks == 1);
  CHECK(one_block.seconds > best.cost.seconds);
  CostEstimate tiny = cost(1024, 16);
  CHECK(tiny.blocks == 1024);
  CHECK(tiny.cache_bytes > cost(4, 16).cache_bytes);  // X is re-read by every block
  CHECK(tiny.seconds > best.cost.seconds);
  CHECK(tiny.seconds > 2 * best.cost.seconds);
}

TEST_CASE("cost model (CPU): a kernel below the grain runs on one core, so its blocks take turns", "[tune][cost]") {
  // A decode-sized rms_linear (1 x 64 @ 64 x 64: about 4,000 multiply-adds) runs on the calling
  // thread (cpu/parallel_grain.h): a second block buys no core, only its overhead.
  TargetDescription t = four_cores();
  sgraph::SGraph g = cpu_family(fam::kRmsLinear);
  auto cost = [&](int64_t n, int64_t d, int64_t g1) {
    return estimate_cost(sgraph::instantiate(g, {{"n", n}, {"d", d}}, {{"g1", g1}, {"F1", 16}}, t.tile_budget()), t);
  };
  CHECK(cost(1, 64, 1).parallel_efficiency == Approx(0.25));
  CHECK(cost(1, 64, 4).parallel_efficiency == Approx(0.25));
  CHECK(cost(1, 64, 1).seconds < cost(1, 64, 4).seconds);
  CHECK(rank(g, {{"n", 1}, {"d", 64}}, t).front().sizes.at("g1") == 1);
  // Above it (16 x 1024 @ 1024 x 1024), four blocks take the four cores.
  CHECK(cost(16, 1024, 4).parallel_efficiency == 1.0);
  CHECK(cost(16, 1024, 4).seconds < cost(16, 1024, 1).seconds);
}

TEST_CASE("cost model: monotone in bandwidth, peak and cores", "[tune][cost]") {
  TargetDescription t = four_cores();
  sgraph::SGraph g = cpu_family(fam::kGatedMlp);
  DimBindings dims{{"n", 8}, {"d", 512}};
  sgraph::Instance inst = sgraph::instantiate(g, dims, {{"g1", 8}, {"F1", 4}}, t.tile_budget());
  CostEstimate base = estimate_cost(inst, t);
  // Two matmuls; two accumulators adding an 8x64 tile in each of 4 iterations of 8 blocks; silu and mul after the loop.
  CHECK(base.flops == 2 * (2.0 * 8 * 512 * 512) + 2 * (8 * 64 * 4 * 8) + 2 * (8 * 512));
  TargetDescription faster = t;
  faster.bandwidth_gbs *= 2;
  CHECK(estimate_cost(inst, faster).seconds <= base.seconds);
  faster = t;
  faster.peak_gflops *= 2;
  CHECK(estimate_cost(inst, faster).seconds <= base.seconds);
  TargetDescription fewer = t;
  fewer.cores = 3;  // 8 blocks on 3 cores: 3 waves, efficiency 8/9
  CostEstimate c3 = estimate_cost(inst, fewer);
  CHECK(c3.parallel_efficiency == Approx(8.0 / 9));
  CHECK(c3.seconds > base.seconds);
}

TEST_CASE("cost model: a two-kernel family with cross-block partials", "[tune][cost]") {
  TargetDescription t = four_cores();
  sgraph::SGraph g = cpu_family(fam::kAttention);
  DimBindings dims{{"B", 16}, {"q", 1}, {"e", 128}, {"s", 1024}};
  std::vector<Ranked> ranked = rank(g, dims, t);
  REQUIRE_FALSE(ranked.empty());
  for (const Ranked& r : ranked) {
    CHECK(r.cost.kernels == 2);
    CHECK(r.cost.seconds > 0);
    CHECK(r.cost.flops > 0);
    // Each kernel's part (what prism_bench_kernels sets beside its measured time): the partials'
    // kernel and the combining one, summing to the whole.
    REQUIRE(r.cost.kernel_seconds.size() == 2);
    CHECK(r.cost.kernel_seconds[0] > r.cost.kernel_seconds[1]);
    CHECK(r.cost.kernel_seconds[0] + r.cost.kernel_seconds[1] == Approx(r.cost.seconds));
  }
  // The partials Pn/Pd are written by kernel 0 and read once by kernel 1: more memory traffic
  // with more key splits (g2).
  auto cost = [&](int64_t g2) {
    return estimate_cost(sgraph::instantiate(g, dims, {{"g1", 16}, {"g2", g2}, {"F1", 1}, {"g3", 16}, {"F2", 1}}, t.tile_budget()), t);
  };
  CHECK(cost(8).memory_bytes > cost(2).memory_bytes);
}

TEST_CASE("cost model: kernel costs kept across one family's instantiations give each estimate exactly", "[tune][cost]") {
  // The attention family's partials (kernel 0 writes them, kernel 1 reads them) have a shape that
  // names a parameter of kernel 0 (g2): kernel 1's cost depends on it too.
  TargetDescription t = four_cores();
  struct Case {
    const char* family;
    DimBindings dims;
  };
  for (const Case& c : {Case{fam::kAttention, {{"B", 16}, {"q", 1}, {"e", 128}, {"s", 1024}}},
                        Case{fam::kGatedMlp, {{"n", 8}, {"d", 512}}}, Case{fam::kLlama, {{"n", 4}, {"d", 256}, {"m", 512}}}}) {
    sgraph::SGraph g = cpu_family(c.family);
    const sgraph::Analysis analysis = sgraph::analyze(g);
    sgraph::Instance probe{g, c.dims, analysis};
    CostMemo memo;
    int compared = 0;
    for (const DimBindings& sizes : sgraph::enumerate(g, c.dims, t.tile_budget())) {
      probe.bindings = c.dims;
      probe.bindings.insert(sizes.begin(), sizes.end());
      const CostEstimate kept = estimate_cost(probe, t, memo), fresh = estimate_cost(probe, t);
      CHECK(kept.seconds == fresh.seconds);
      CHECK(kept.memory_bytes == fresh.memory_bytes);
      CHECK(kept.cache_bytes == fresh.cache_bytes);
      CHECK(kept.flops == fresh.flops);
      CHECK(kept.blocks == fresh.blocks);
      CHECK(kept.bound == fresh.bound);
      CHECK(kept.kernel_seconds == fresh.kernel_seconds);
      ++compared;
    }
    CHECK(compared > 10);
  }
}

TEST_CASE("cost model: of two instantiations moving the same bytes, the one with wider contiguous rows is cheaper", "[tune][cost]") {
  TargetDescription t = four_cores();
  sgraph::SGraph g = cpu_family(fam::kRmsLinear);
  DimBindings dims{{"n", 16}, {"d", 4096}};
  auto cost = [&](int64_t g1, int64_t f1) {
    return estimate_cost(sgraph::instantiate(g, dims, {{"g1", g1}, {"F1", f1}}, t.tile_budget()), t);
  };
  // W's tile is [d/F1, d/g1]: rows of d/g1 floats. Four blocks (4 KiB rows) beat 64 (256 B rows),
  // both using every core and reading W once.
  CHECK(cost(4, 256).seconds < cost(64, 16).seconds);
}

TEST_CASE("cost model: an nn.Linear weight read as W^T streams runs along its own rows, as long as the loop's K step", "[tune][cost]") {
  TargetDescription t = four_cores();
  sgraph::SGraph g = cpu_family(fam::kLlama);
  DimBindings dims{{"n", 8}, {"d", 4096}, {"m", 4096}};
  auto cost = [&](int64_t f1) { return estimate_cost(sgraph::instantiate(g, dims, {{"g1", 4}, {"F1", f1}}, t.tile_budget()), t); };
  // W's tile is [d/F1, m/g1] in the view's order, m/g1 rows of d/F1 floats where W lies: 16
  // floats a run (a run's surcharge four times its bytes) against 128 (half its bytes).
  CHECK(cost(256).memory_bytes > 2 * cost(32).memory_bytes);
  CHECK(cost(256).seconds > cost(32).seconds);
}

namespace {

// This machine's kind: 2 Zen 4 cores, 32 KiB L1 and 1 MiB L2 each, 32 MiB of L3.
TargetDescription two_zen4_cores() {
  TargetDescription t = four_cores();
  t.cores = 2;
  backend::cpu::cpu_features(t).simd_bytes = 64;
  t.bandwidth_gbs = 40;
  t.cache_bandwidth_gbs = 200;
  t.peak_gflops = 235;
  t.l1_bytes = 32 << 10;
  t.l2_bytes = 1 << 20;
  t.l3_bytes = 32 << 20;
  t.fast_memory_bytes = 64 << 20;
  return t;
}

// gated_mlp with the grid splitting the rows of X: every block reads all of both weights.
std::string gated_mlp_split_rows() {
  std::string text = fam::kGatedMlp;
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  };
  replace("load X map {grid: -, loop: 1}", "load X map {grid: 0->g1, loop: 1}");
  replace("load Wg map {grid: 1->g1, loop: 0}", "load Wg map {grid: -, loop: 0}");
  replace("load Wu map {grid: 1->g1, loop: 0}", "load Wu map {grid: -, loop: 0}");
  replace("map {grid: 1->g1, loop: -}", "map {grid: 0->g1, loop: -}");
  return text;
}

}  // namespace

TEST_CASE("cost model: blocks re-reading weights near L3's size read them from memory, small ones from the caches", "[tune][cost]") {
  TargetDescription t = two_zen4_cores();
  sgraph::SGraph rows = cpu_family(gated_mlp_split_rows()), cols = cpu_family(fam::kGatedMlp);
  auto cost = [&](const sgraph::SGraph& g, int64_t d) {
    return estimate_cost(sgraph::instantiate(g, {{"n", 8}, {"d", d}}, {{"g1", 2}, {"F1", 16}}, t.tile_budget()), t);
  };
  const double weights = 2.0 * 2048 * 2048 * 4;  // 32 MiB: a quarter of it stays in the caches
  CHECK(cost(rows, 2048).memory_bytes > 1.7 * weights);
  // (Up to 8% over: each 4 KiB row of a weight tile pays the contiguous-run surcharge, assumption 7.)
  CHECK(cost(cols, 2048).memory_bytes < 1.08 * weights + 2 * 8 * 2048 * 4 * 2);
  CHECK(cost(rows, 2048).seconds > 1.5 * cost(cols, 2048).seconds);
  const double small = 2.0 * 512 * 512 * 4;  // 2 MiB: re-read from the caches
  CHECK(cost(rows, 512).memory_bytes < 1.08 * small + 2 * 8 * 512 * 4 * 2);
  CHECK(cost(rows, 512).cache_bytes >= small);
}

TEST_CASE("cost model: a long loop of thin K steps into an accumulator larger than L1 moves it every iteration", "[tune][cost]") {
  TargetDescription t = two_zen4_cores();
  sgraph::SGraph g = cpu_family(fam::kGatedMlp);
  auto cost = [&](int64_t f1) {
    return estimate_cost(sgraph::instantiate(g, {{"n", 8}, {"d", 2048}}, {{"g1", 2}, {"F1", f1}}, t.tile_budget()), t);
  };
  // Two 8 x 1024 f32 accumulators (32 KiB each) per block: 2 x 32 KiB x 2 per iteration.
  const double per_iteration = 2 * (2 * 8 * 1024 * 4.0) * 2;
  // (X's shorter rows at F1=256 add a little of their own: assumption 7.)
  CHECK(cost(256).cache_bytes - cost(8).cache_bytes == Approx(per_iteration * (256 - 8)).epsilon(0.01));
  CHECK(cost(256).seconds > cost(8).seconds);
  // An accumulator within half of L1 stays there: n=2 gives 8 KiB accumulators.
  auto small = [&](int64_t f1) {
    return estimate_cost(sgraph::instantiate(g, {{"n", 2}, {"d", 2048}}, {{"g1", 2}, {"F1", f1}}, t.tile_budget()), t);
  };
  CHECK(small(256).cache_bytes - small(8).cache_bytes < 0.01 * (2 * (2 * 2 * 1024 * 4.0) * 2) * (256 - 8));
}

TEST_CASE("cost model: on a GPU, a matmul of loaded 16-bit tiles runs at the tensor-core peak in a WMMA shape or the decode form, at the part of each fragment it fills through mma.sync", "[tune][cost]") {
  TargetDescription gpu = compute_bound_h100();
  TargetDescription no_tensor_cores = gpu;
  backend::cuda::gpu_features(no_tensor_cores).tensor_peak_gflops = 0;
  sgraph::SGraph g = sgraph::parse(fam::kRmsLinear);  // f16 X and W
  auto compute_bound = [&](int64_t n, const TargetDescription& t, int64_t g1 = 64) {
    sgraph::Instance inst = sgraph::instantiate(g, {{"n", n}, {"d", 8192}}, {{"g1", g1}, {"F1", 64}}, t.tile_budget());
    return estimate_cost(inst, t);
  };
  // n=16: 16 x 128 @ 128 x 128 tiles fit m16n16k16.
  CHECK(compute_bound(16, gpu).bound == "compute");
  CHECK(compute_bound(16, gpu).seconds < 0.5 * compute_bound(16, no_tensor_cores).seconds);
  // n=12: the decode form (W's columns as the instruction's rows) fills 12 of its two 8-column
  // groups: faster than the f32 FMA peak, slower per row than a WMMA shape.
  CHECK(compute_bound(12, gpu).seconds < 0.9 * compute_bound(12, no_tensor_cores).seconds);
  CHECK(compute_bound(12, gpu).seconds / 12 > compute_bound(16, gpu).seconds / 16);
  // n=3: 3 of its 8 columns, on 4 warps' chains of steps (the next test): no faster than the
  // FMA path, slower per row than 8 rows.
  CHECK(compute_bound(3, gpu).seconds <= compute_bound(3, no_tensor_cores).seconds);
  CHECK(compute_bound(3, gpu).seconds / 3 > compute_bound(8, gpu).seconds / 8);
  // 8 columns a block (no multiple of 16): mma.sync gathering every element fills 3 of a
  // fragment's 16 rows, never predicted slower than the FMA path.
  CHECK(compute_bound(3, gpu, 1024).seconds == compute_bound(3, no_tensor_cores, 1024).seconds);
  // The flops counted are the same; only the rate differs.
  CHECK(compute_bound(16, gpu).flops == compute_bound(16, no_tensor_cores).flops);
}

TEST_CASE("cost model: on a GPU, tensor cores run as fast as the warps' chains of steps keep them: more warps or more blocks an SM keep more", "[tune][cost]") {
  TargetDescription gpu = compute_bound_h100();
  const sgraph::SGraph g = sgraph::parse(fam::kRmsLinear);  // f16 X and W
  const DimBindings dims{{"n", 8}, {"d", 8192}};
  auto estimate = [&](const TargetDescription& t, int64_t g1) {
    return estimate_cost(sgraph::instantiate(g, dims, {{"g1", g1}, {"F1", 64}}, t.tile_budget()), t);
  };
  // 128 columns a block, the decode form's 8 tiles: 4 warps run two each, one after the other; 8
  // warps one each; 16 split k in two. Each doubling halves the matmul's time.
  TargetDescription threads256 = gpu, threads512 = gpu;
  backend::cuda::gpu_features(threads256).threads_per_block = 256;
  backend::cuda::gpu_features(threads512).threads_per_block = 512;
  CHECK(estimate(gpu, 64).bound == "compute");
  CHECK(estimate(gpu, 64).seconds > 1.9 * estimate(threads256, 64).seconds);
  CHECK(estimate(threads256, 64).seconds > 1.9 * estimate(threads512, 64).seconds);
  // 128 blocks of 64 columns on half the SMs (and half of every rate): two blocks an SM run
  // their chains side by side, so the estimate holds; f32 FMAs, which need no chains, take twice
  // as long.
  TargetDescription half = gpu;
  half.cores /= 2;
  half.peak_gflops /= 2;
  half.bandwidth_gbs /= 2;
  backend::cuda::gpu_features(half).tensor_peak_gflops /= 2;
  CHECK(estimate(half, 128).seconds == Approx(estimate(gpu, 128).seconds).epsilon(0.05));
  TargetDescription fma = gpu, fma_half = half;
  backend::cuda::gpu_features(fma).tensor_peak_gflops = 0;
  backend::cuda::gpu_features(fma_half).tensor_peak_gflops = 0;
  CHECK(estimate(fma_half, 128).seconds == Approx(2 * estimate(fma, 128).seconds).epsilon(0.05));
}

TEST_CASE("cost model: on a GPU, an SM holds the blocks its threads and shared memory allow, each with its pipeline's next stages in flight", "[tune][cost]") {
  const backend::cuda::CudaCostRules rules;
  const TargetDescription gpu = cuda_h100_data();  // 227 KiB of shared memory a block, 128 threads
  // 40 KB of tiles and 32 KB loaded an iteration: three stages (104 KB) fit twice in 228 KiB;
  // as a block waits for one, the other two are in flight too.
  backend::BlockResidency r = rules.residency({8, 32768, 40960, 8 * 32768}, gpu);
  CHECK(r.blocks_per_core == 2);
  CHECK(r.bytes_in_flight == 3 * 32768);
  // 120 KB an iteration fits once beside 100 KB: two stages, one block.
  r = rules.residency({8, 120000, 100000, 8 * 120000}, gpu);
  CHECK(r.blocks_per_core == 1);
  CHECK(r.bytes_in_flight == 2 * 120000);
  // 140 KB does not: one stage, one iteration's loads issued before their wait.
  CHECK(rules.residency({8, 140000, 100000, 8 * 140000}, gpu).bytes_in_flight == 140000);
  // No loop: what the block loads in all; a tiny block: 16 of 128 threads fill an SM's 2048.
  r = rules.residency({1, 0, 4096, 4096}, gpu);
  CHECK(r.blocks_per_core == 16);
  CHECK(r.bytes_in_flight == 4096);
  // Two blocks an SM (threads=256): a core is half an SM, which holds one of the first block.
  const backend::Schedule two{{"threads", 256}, {"blocks_per_sm", 2}};
  const TargetDescription slot = *tune::backend_for(backend::cuda::kTarget).scheduled_target(two, gpu);
  CHECK(slot.cores == 2 * gpu.cores);
  CHECK(rules.residency({8, 32768, 40960, 8 * 32768}, slot).blocks_per_core == 1);
  // A CPU core runs one block at a time and prices no latency.
  const backend::CostRules& cpu = tune::backend_for(backend::cpu::kTarget).cost_rules();
  CHECK(cpu.residency({8, 32768, 40960, 8 * 32768}, four_cores()).blocks_per_core == 1);
  CHECK(cpu.memory_latency_seconds(four_cores()) == 0);
}

TEST_CASE("cost model: on a GPU, a wave of blocks waits a loaded latency each time its loads refill what it keeps in flight", "[tune][cost]") {
  const sgraph::SGraph g = sgraph::parse(fam::kRmsLinear);
  const TargetDescription gpu = cuda_h100_data();
  auto estimate = [&](int64_t f1) {
    return estimate_cost(sgraph::instantiate(g, {{"n", 8}, {"d", 4096}}, {{"g1", 128}, {"F1", f1}}, gpu.tile_budget()), gpu);
  };
  // 32 columns a block: 16 rows of W an iteration (1.25 KiB with X's), three iterations in
  // flight, refill the 320 KiB a block loads 85 times, a microsecond each (kLoadedLatencySeconds):
  // far slower than W's 32 MiB at 3.35 TB/s (10 us).
  CHECK(estimate(256).seconds > 80 * backend::cuda::kLoadedLatencySeconds);
  // 256 rows an iteration: 16 KiB, a handful of refills, well under the bandwidth's time.
  CHECK(estimate(16).seconds < 30e-6);
  CHECK(estimate(256).memory_bytes == Approx(estimate(16).memory_bytes).epsilon(0.05));
}

TEST_CASE("cost model: on a GPU, each statement a block runs costs a barrier", "[tune][cost]") {
  // Compute-bound (peaks scaled down): the same tiles in twice the iterations (the chains' fill
  // holds: each tile's steps halve with its k) add 64 iterations of the loop's statements, a
  // barrier each (at least the loads' wait and the matmul), beside the accumulator's extra adds.
  TargetDescription gpu = compute_bound_h100();
  const sgraph::SGraph g = sgraph::parse(fam::kRmsLinear);
  auto estimate = [&](int64_t f1) {
    return estimate_cost(sgraph::instantiate(g, {{"n", 8}, {"d", 8192}}, {{"g1", 64}, {"F1", f1}}, gpu.tile_budget()), gpu);
  };
  const CostEstimate f64 = estimate(64), f128 = estimate(128);
  REQUIRE(f64.bound == "compute");
  const double adds = (f128.flops - f64.flops) / (gpu.peak_gflops * 1e9 * f64.parallel_efficiency);
  const double barriers = f128.seconds - f64.seconds - adds;
  CHECK(barriers > 64 * 2 * 50e-9);
  CHECK(barriers < 64 * 10 * 50e-9);
}

TEST_CASE("cost model: a GPU pays a sector for each contiguous run of a tile, a CPU a DRAM page", "[tune][cost]") {
  // rms_linear at a decode shape, f16: W's tile [d/F1, d/g1] lies as d/F1 runs of d/g1 halves.
  const sgraph::SGraph g = sgraph::parse(fam::kRmsLinear);
  const TargetDescription gpu = cuda_h100_data();
  TargetDescription cpu = four_cores();
  cpu.fast_memory_bytes = gpu.fast_memory_bytes;
  auto bytes = [&](int64_t g1, int64_t f1, const TargetDescription& t) {
    return estimate_cost(sgraph::instantiate(g, {{"n", 8}, {"d", 4096}}, {{"g1", g1}, {"F1", f1}}, t.tile_budget()), t).memory_bytes;
  };
  const double w = 4096.0 * 4096 * 2;  // W's bytes (X's re-reads add a few percent)
  // 32 columns a block, runs of 64 bytes: half their bytes more on a GPU (32 of 64), 4x on a CPU.
  CHECK(bytes(128, 4, gpu) > 1.45 * w);
  CHECK(bytes(128, 4, gpu) < 1.6 * w);
  CHECK(bytes(128, 4, cpu) > 4 * w);
  // 256 columns, runs of 512 bytes: a sixteenth more on a GPU.
  CHECK(bytes(16, 64, gpu) < 1.15 * w);
}

TEST_CASE("cost model: on a GPU, loads overlap the math only where the loop's tiles fit twice (double buffering)", "[tune][cost]") {
  TargetDescription gpu = cuda_h100_data();
  backend::cuda::gpu_features(gpu).tensor_peak_gflops = 0;  // f32 FMA math: of the order of the loads here
  sgraph::SGraph g = sgraph::parse(fam::kRmsLinear);
  const DimBindings dims{{"n", 16}, {"d", 1024}}, sizes{{"g1", 16}, {"F1", 4}};  // 40 KiB of tiles per iteration
  const CostEstimate both = estimate_cost(sgraph::instantiate(g, dims, sizes, gpu.tile_budget()), gpu);
  TargetDescription tight = gpu;
  tight.fast_memory_bytes = 60 * 1024;  // they fit once, not twice
  const CostEstimate serial = estimate_cost(sgraph::instantiate(g, dims, sizes, tight.tile_budget()), tight);
  CHECK(serial.seconds > both.seconds);
  CHECK(serial.flops == both.flops);
  // One iteration: nothing to load ahead.
  const CostEstimate once = estimate_cost(sgraph::instantiate(g, dims, {{"g1", 16}, {"F1", 1}}, gpu.tile_budget()), gpu);
  CHECK(once.seconds > both.seconds);
}

TEST_CASE("cost model (CPU): a matmul of a 16-bit B tile pays for widening it on the FMA ports, less with more rows", "[tune][cost]") {
  // Bandwidth scaled up 1000x, so that compute decides the estimate.
  TargetDescription t = two_zen4_cores();
  t.bandwidth_gbs *= 1000;
  t.cache_bandwidth_gbs *= 1000;
  const sgraph::SGraph wide = cpu_family(fam::kRmsLinear), narrow = sgraph::parse(fam::kRmsLinear);  // f32 / f16 X and W
  auto cost = [&](const sgraph::SGraph& g, int64_t n) {
    return estimate_cost(sgraph::instantiate(g, {{"n", n}, {"d", 4096}}, {{"g1", 2}, {"F1", 16}}, t.tile_budget()), t);
  };
  for (int64_t n : {8, 2}) CHECK(cost(wide, n).flops == cost(narrow, n).flops);
  // The register block covers all n rows: each B vector is widened (two operations) once per n
  // FMAs. 8 rows: 1.25 times f32's. 2 rows: nearly twice, where f32's own 2-row blocks also cost
  // more per FMA than 8-row ones (8 accumulators wait on their FMAs' latency).
  CHECK(cost(narrow, 8).seconds / cost(wide, 8).seconds == Approx(1.25).epsilon(0.05));
  CHECK(cost(narrow, 2).seconds / cost(wide, 2).seconds > 1.8);
  CHECK(cost(narrow, 2).seconds / cost(wide, 2).seconds < 2.0);
  CHECK(cost(wide, 2).seconds / cost(wide, 2).flops > 1.02 * cost(wide, 8).seconds / cost(wide, 8).flops);
  // With vdpbf16ps, bf16 x bf16 tiles run at its peak (twice the FMAs'); f16 still widens.
  std::string text = fam::kRmsLinear;
  for (size_t at = 0; (at = text.find(": f16", at)) != std::string::npos; at += 5) text.replace(at, 5, ": bf16");
  const sgraph::SGraph bf16 = sgraph::parse(text);
  const double widened = cost(bf16, 8).seconds;
  backend::cpu::cpu_features(t).bf16_dot_peak_gflops = 2 * t.peak_gflops;
  CHECK(cost(bf16, 8).seconds == Approx(0.5 * cost(wide, 8).seconds).epsilon(0.05));
  CHECK(cost(bf16, 8).seconds < widened);
  CHECK(cost(narrow, 8).seconds / cost(wide, 8).seconds == Approx(1.25).epsilon(0.05));
}

TEST_CASE("cost model (CPU): f32 FMAs cost their register blocks' slots, so few rows per block cost more", "[tune][cost]") {
  // AVX2 (16 registers): 8-row blocks of f32 B (2 x 5, B folded into the FMAs) cost about 1.3
  // times a wide tile's slots per FMA, 16-row ones (6 x 2) about 1.1: an f32 gated MLP at 16 x 1024
  // on a 2-core Zen 3 ran 1.02 ms with its rows split in two and 0.78 with 16-row blocks.
  TargetDescription t = two_zen4_cores();
  backend::cpu::cpu_features(t).simd_bytes = 32;
  t.bandwidth_gbs *= 1000;  // compute decides
  t.cache_bandwidth_gbs *= 1000;
  const sgraph::SGraph f32 = cpu_family(fam::kRmsLinear);
  auto per_flop = [&](int64_t g1_rows) {
    const CostEstimate c = estimate_cost(sgraph::instantiate(f32, {{"n", g1_rows}, {"d", 4096}}, {{"g1", 2}, {"F1", 16}}, t.tile_budget()), t);
    return c.seconds / c.flops;
  };
  CHECK(per_flop(8) > 1.1 * per_flop(16));
  CHECK(per_flop(16) > per_flop(64));
  namespace cpu = backend::cpu::detail;  // a wide f32 tile is the reference: 1
  CHECK(cpu::widening_factor(cpu::choose_blocking(240, 384, 256, 32, DType::F32), DType::F32, 32) == Approx(1.0));
}

TEST_CASE("cost model (CPU): streaming and compute overlap in part", "[tune][cost]") {
  TargetDescription t = two_zen4_cores();
  const sgraph::SGraph g = cpu_family(fam::kRmsLinear);
  auto seconds = [&](const TargetDescription& target) {
    sgraph::Instance inst = sgraph::instantiate(g, {{"n", 8}, {"d", 4096}}, {{"g1", 2}, {"F1", 16}}, target.tile_budget());
    return estimate_cost(inst, target).seconds;
  };
  TargetDescription no_movement = t, no_compute = t;
  no_movement.bandwidth_gbs *= 1e6;
  no_movement.cache_bandwidth_gbs *= 1e6;
  no_compute.peak_gflops *= 1e6;
  // Overheads (1 us per wave, 5 us per kernel) come on top of each, once.
  const double overhead = 16 * 1e-6 + 5e-6, compute = seconds(no_movement) - overhead, movement = seconds(no_compute) - overhead;
  REQUIRE(compute > 0);
  REQUIRE(movement > 0);
  // (Most of the movement is streaming, which is what overlaps in part; the rest, accumulator
  // tiles moving through L2, is 6% of it.)
  const CostEstimate parts = estimate_cost(sgraph::instantiate(g, {{"n", 8}, {"d", 4096}}, {{"g1", 2}, {"F1", 16}}, t.tile_budget()), t);
  REQUIRE(parts.cache_bytes < 0.1 * parts.memory_bytes);
  CHECK(seconds(t) - overhead == Approx(std::max(compute, movement) + 0.5 * std::min(compute, movement)).epsilon(0.01));
}

namespace {

// One bf16 matmul of an input by a weight: the CPU backend's library kernel (prism's micro-kernel
// over chunks, library_matmul_chunks).
const char* kLibraryMatmul = R"(input X: bf16[n, d]
input W: bf16[d, m]
kernel 0: P: bf16 = matmul(X, W)
output P
)";

}  // namespace

TEST_CASE("cost model (CPU): a 16-bit library matmul streams B in row pieces of its chunks and widens it", "[tune][cost]") {
  TargetDescription t = two_zen4_cores();
  const std::string text = kLibraryMatmul;
  auto cost = [&](const std::string& family, int cores) {
    t.cores = cores;
    return estimate_cost(sgraph::instantiate(sgraph::parse(family), {{"n", 8}, {"d", 4096}, {"m", 4096}}, {}, t.tile_budget()), t);
  };
  // 16 cores: pieces of 256 columns (512 bytes) cost more streaming than 2 cores' 2048 (4 KiB).
  CHECK(cost(text, 16).memory_bytes > cost(text, 2).memory_bytes);
  // f32 goes to OpenBLAS: no surcharge either way.
  std::string f32 = text;
  for (size_t at; (at = f32.find("bf16")) != std::string::npos;) f32.replace(at, 4, "f32");
  CHECK(cost(f32, 16).memory_bytes == cost(f32, 2).memory_bytes);
}

TEST_CASE("cost model (CPU): an f32 library matmul (sgemm) pays for packing B at the memory bandwidth, at half the peak", "[tune][cost]") {
  TargetDescription t = two_zen4_cores();
  std::string f32 = kLibraryMatmul;
  for (size_t at; (at = f32.find("bf16")) != std::string::npos;) f32.replace(at, 4, "f32");
  auto cost = [&](int64_t n, int64_t d) {
    return estimate_cost(sgraph::instantiate(sgraph::parse(f32), {{"n", n}, {"d", d}, {"m", d}}, {}, t.tile_budget()), t);
  };
  // A decode layer's 8 rows: three more passes over B at the memory bandwidth, however small B is
  // (a 4 MiB weight fits the caches, whose rate the first pass gets).
  for (int64_t d : {1024, 4096}) {
    const double b_bytes = double(d * d * 4);
    INFO("d = " << d);
    CHECK(cost(8, d).seconds >= 3 * b_bytes / (t.bandwidth_gbs * 1e9));
    CHECK(cost(8, d).bound == "memory");
  }
  // Many rows: the FMAs at half the peak bound it.
  const CostEstimate wide = cost(512, 1024);
  CHECK(wide.bound == "compute");
  CHECK(wide.seconds >= 2 * wide.flops / (t.peak_gflops * 1e9));
  // 16 bits: prism's micro-kernel, no packing (its chunks' streaming instead).
  const CostEstimate bf16 = estimate_cost(sgraph::instantiate(sgraph::parse(kLibraryMatmul), {{"n", 8}, {"d", 4096}, {"m", 4096}}, {}, t.tile_budget()), t);
  CHECK(bf16.seconds < 0.3 * cost(8, 4096).seconds);
}

TEST_CASE("cost model (CPU): a 16-bit library matmul with fewer chunks than cores leaves the rest idle", "[tune][cost]") {
  TargetDescription t = two_zen4_cores();
  const sgraph::SGraph g = sgraph::parse(kLibraryMatmul);
  auto cost = [&](int64_t m, int cores) {
    t.cores = cores;  // the same peak and bandwidth, shared by more cores
    return estimate_cost(sgraph::instantiate(g, {{"n", 8}, {"d", 1024}, {"m", m}}, {}, t.tile_budget()), t);
  };
  // 1024 columns: 4 chunks of 256 on 4 or 16 cores (library_matmul_chunks stops at 256).
  CHECK(cost(1024, 4).parallel_efficiency == 1.0);
  CHECK(cost(1024, 16).parallel_efficiency == Approx(0.25));
  CHECK(cost(1024, 16).memory_bytes == cost(1024, 4).memory_bytes);
  // A quarter of the cores at work: about four times as long (less the fixed per-kernel overhead).
  CHECK(cost(1024, 16).seconds > 3.5 * cost(1024, 4).seconds);
  CHECK(cost(1024, 16).seconds < 4.0 * cost(1024, 4).seconds);
  // 4096 columns: 16 chunks, every core busy; 2 cores: never fewer chunks than cores here.
  CHECK(cost(4096, 16).parallel_efficiency == 1.0);
  CHECK(cost(1024, 2).parallel_efficiency == 1.0);
}

TEST_CASE("cost model: on a GPU, the kernel that sums split-k partials runs in the launch before it, on one block per group or waiting", "[tune][cost]") {
  // The gated MLP at a decode shape, k split 4 ways over 32 column tiles (sgraph/tail_groups.h).
  const sgraph::SGraph g = sgraph::parse(fam::kGatedMlpSplitK);
  const TargetDescription gpu = cuda_h100_data();
  const DimBindings dims{{"n", 8}, {"d", 4096}};
  auto estimate = [&](int64_t g3, const TargetDescription& t, const sgraph::SGraph& family) {
    return estimate_cost(sgraph::instantiate(family, dims, {{"g1", 4}, {"g2", 32}, {"F1", 8}, {"g3", g3}, {"F2", 4}}, t.tile_budget()), t);
  };
  const CostEstimate groups32 = estimate(32, gpu, g), groups8 = estimate(8, gpu, g);
  CHECK(groups32.kernels == 1);  // one launch: the partials' sum is the first kernel's tail
  REQUIRE(groups32.kernel_seconds.size() == 2);
  CHECK(groups32.kernel_seconds[1] < 5e-6);  // no launch of its own (a launch alone is priced 5 us)
  CHECK(groups8.kernels == 1);
  CHECK(groups8.kernel_seconds[1] > groups32.kernel_seconds[1]);  // 8 blocks sum all 32 tiles' partials
  // One group (one block sums every partial): no tickets, but its blocks wait in the launch.
  const sgraph::Instance one = sgraph::instantiate(g, {{"n", 8}, {"d", 256}}, {{"g1", 2}, {"g2", 2}, {"F1", 2}, {"g3", 1}, {"F2", 2}}, gpu.tile_budget());
  CHECK(sgraph::tail_groups(one, 1) == 1);
  CHECK(estimate_cost(one, gpu).kernels == 1);
  // Tickets run a tail on its groups; a tail that waits runs on every SM.
  const backend::CostRules& rules = tune::backend_for(backend::cuda::kTarget).cost_rules();
  CHECK(rules.tail_blocks_at_once(32, 128, 32, gpu) == 32);
  CHECK(rules.tail_blocks_at_once(1, 256, 256, gpu) == gpu.cores);
  CHECK(tune::backend_for(backend::cpu::kTarget).cost_rules().tail_blocks_at_once(32, 128, 32, four_cores()) == 0);
  // A CPU runs no tail in a launch before it: two kernels, each a parallel region.
  TargetDescription cpu = four_cores();
  cpu.fast_memory_bytes = gpu.fast_memory_bytes;
  CHECK(estimate(32, cpu, cpu_family(fam::kGatedMlpSplitK)).kernels == 2);
}
