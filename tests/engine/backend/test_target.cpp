// Target descriptions: this machine's CPU (measured once, then read from the cache) and the H100 data.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <utility>

#include "engine/backend/cuda/gpu_features.h"
#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/describe.h"
#include "engine/backend/cuda/describe.h"
#include "engine/backend/target.h"
#include "engine/error.h"
#include "engine/tune/backends.h"
#include "support/scoped_env.h"
#include "support/subprocess.h"

using namespace prism;
using namespace prism::backend;
using cpu::describe_cpu;
using cuda::cuda_h100_data;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// 2 cores, 1 MiB of L2 each, 32 MiB of L3; 40 GB/s from memory, 200 from the caches.
TargetDescription zen4_like() {
  TargetDescription t;
  t.cores = 2;
  t.l2_bytes = 1 << 20;
  t.l3_bytes = 32 << 20;
  t.bandwidth_gbs = 40;
  t.cache_bandwidth_gbs = 200;
  return t;
}

}  // namespace

TEST_CASE("describe_cpu measures once and reads its cache afterwards", "[tune][target]") {
  test::ScopedEnv own("PRISM_CPU_DESCRIPTION", "");  // this cache's file, not the test run's
  test::TempDir dir;
  TargetDescription first = describe_cpu(dir.path());
  const cpu::CpuFeatures& cpu_first = cpu::cpu_features(first);
  CHECK(first.target == cpu::kTarget);
  CHECK(first.measured);
  CHECK(first.cores >= 1);
  CHECK((cpu_first.simd_bytes == 16 || cpu_first.simd_bytes == 32 || cpu_first.simd_bytes == 64));
  CHECK(first.bandwidth_gbs > 0);
  CHECK(first.peak_gflops > 0);
  CHECK(first.fast_memory_bytes > 0);
  if (first.l2_bytes > 0) CHECK(first.fast_memory_bytes == first.l2_bytes / 2);
  CHECK_THAT(first.model, Catch::Contains(std::to_string(first.cores) + " core"));
  CHECK(first.tile_budget().fast_memory_bytes == first.fast_memory_bytes);
  const std::string file = dir / "cpu-target.txt";
  REQUIRE(std::filesystem::exists(file));

  // The read curve: ascending sizes, never faster for a larger set, within memory's and the caches'.
  if (first.l3_bytes > 0) {
    REQUIRE(first.read_curve.size() >= 2);
    for (size_t i = 1; i < first.read_curve.size(); ++i) {
      CHECK(first.read_curve[i].first > first.read_curve[i - 1].first);
      CHECK(first.read_curve[i].second <= first.read_curve[i - 1].second);
    }
    CHECK(first.bandwidth_for(1024) >= first.bandwidth_for(4 * first.cache_capacity()));
    // It starts at sets the cores' second levels hold, not at the last level's.
    const double l2_all = double(first.l2_bytes) * first.cores;
    if (first.l2_bytes > 0) CHECK(first.read_curve.front().first <= l2_all / 2);
    // From there to the last level's point, no two sizes more than twice apart: the curve is
    // interpolated between them, and the second levels' rate falls steeply past their capacity.
    for (size_t i = 1; first.l2_bytes > 0 && i < first.read_curve.size(); ++i)
      if (first.read_curve[i - 1].first >= l2_all && first.read_curve[i].first <= first.l3_bytes / 4.0)
        CHECK(first.read_curve[i].first <= 2 * first.read_curve[i - 1].first + 64);
  }

  // vdpbf16ps: measured where the CPU has it, and used for bf16 matmuls only where it reaches the
  // f32 FMA's flop rate (Zen 4: twice it; Sapphire Rapids: half, so widening is faster there).
  __builtin_cpu_init();
  CHECK((cpu_first.bf16_dot_gflops > 0) == bool(__builtin_cpu_supports("avx512bf16")));
  CHECK((cpu_first.bf16_dot_peak_gflops == 0 || cpu_first.bf16_dot_peak_gflops == cpu_first.bf16_dot_gflops));
  CHECK((cpu_first.bf16_dot_peak_gflops > 0) == (cpu_first.bf16_dot_gflops >= first.peak_gflops));
  {
    test::ScopedEnv off("PRISM_CPU_DISABLE", "avx512bf16");
    CHECK(cpu::cpu_features(describe_cpu(dir.path())).bf16_dot_peak_gflops == 0);
  }

  // FMAs fed by widened 16-bit vectors: measured where the compiler's target can widen in vectors,
  // never above the FMA peak.
  if (cpu_first.simd_bytes == 64 || (cpu_first.simd_bytes == 32 && __builtin_cpu_supports("f16c"))) {
    CHECK(cpu_first.widen_f16_gflops > 0);
    CHECK(cpu_first.widen_bf16_gflops > 0);
  }
  CHECK(cpu_first.widen_f16_gflops <= first.peak_gflops);
  CHECK(cpu_first.widen_bf16_gflops <= first.peak_gflops);

  TargetDescription again = describe_cpu(dir.path());
  const cpu::CpuFeatures& cpu_again = cpu::cpu_features(again);
  CHECK(cpu_again.widen_f16_gflops == cpu_first.widen_f16_gflops);
  CHECK(cpu_again.bf16_dot_gflops == cpu_first.bf16_dot_gflops);
  CHECK(again.read_curve == first.read_curve);
  CHECK(again.bandwidth_gbs == first.bandwidth_gbs);
  CHECK(again.peak_gflops == first.peak_gflops);
  CHECK(again.model == first.model);

  // The values come from the file: an edited value is what the next call reports.
  std::string text = std::regex_replace(read_text(file), std::regex("bandwidth_gbs=[^\n]*"), "bandwidth_gbs=12345");
  std::ofstream(file) << text;
  CHECK(describe_cpu(dir.path()).bandwidth_gbs == 12345);

  // A file for another machine (or version) is not used: measured again and rewritten.
  std::ofstream(file) << std::regex_replace(text, std::regex("key=[^\n]*"), "key=another machine");
  CHECK(describe_cpu(dir.path()).bandwidth_gbs != 12345);
  CHECK_THAT(read_text(file), Catch::Contains("key=" + first.model));

  // Issue 46, 1: a description planted where others can write (a pre-created 0777 or another
  // user's 0755 ~/.cache/prism) made a tune report 0.001 GB/s. Such a directory is refused.
  const std::string planted = std::regex_replace(read_text(file), std::regex("bandwidth_gbs=[^\n]*"), "bandwidth_gbs=0.001");
  for (const bool other_user : {false, true}) {
    if (other_user && ::geteuid() != 0) {
      WARN("skipped another user's cache directory: needs root to chown");
      continue;
    }
    const std::string theirs = dir / (other_user ? "theirs" : "open");
    std::filesystem::create_directory(theirs);
    std::ofstream(theirs + "/cpu-target.txt") << planted;
    ::chmod(theirs.c_str(), other_user ? 0755 : 0777);
    if (other_user) REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
    CHECK_THROWS_WITH(describe_cpu(theirs), Catch::Contains("the CPU description's cache is unsafe") &&
                                                Catch::Contains(other_user ? "belongs to another user" : "writable by other users"));
  }
}

// ctest's fixture (tests/CMakeLists.txt): the description every other case reads, measured first.
TEST_CASE("the test run's CPU description", "[.][describe]") {
  CHECK(describe_cpu().bandwidth_gbs > 0);
}

TEST_CASE("PRISM_CPU_DESCRIPTION names one description for caches of their own, checked as a cache is", "[tune][target]") {
  // The test run's description (tests/main.cpp), measured once for every test process.
  const TargetDescription measured = describe_cpu();
  const std::string run_file = std::getenv("PRISM_CPU_DESCRIPTION");
  test::TempDir dir;
  std::filesystem::create_directory(dir / "host");
  ::chmod((dir / "host").c_str(), 0700);
  const std::string shared = dir / "host/cpu.txt";
  std::ofstream(shared) << std::regex_replace(read_text(run_file), std::regex("bandwidth_gbs=[^\n]*"), "bandwidth_gbs=12345");
  test::ScopedEnv host("PRISM_CPU_DESCRIPTION", shared);
  // The file named is what every cache reads, and none of them holds one of its own.
  CHECK(describe_cpu(dir / "b").bandwidth_gbs == 12345);
  CHECK(describe_cpu(dir / "c").model == measured.model);
  CHECK_FALSE(std::filesystem::exists(dir / "b/cpu-target.txt"));
  // Its directory is checked as a cache's: one others can write is refused.
  ::chmod((dir / "host").c_str(), 0777);
  CHECK_THROWS_WITH(describe_cpu(dir / "d"), Catch::Contains("the CPU description's cache is unsafe") &&
                                                 Catch::Contains("writable by other users"));
}

TEST_CASE("peaks are what the machine reached: a disturbed measurement does not lower them", "[tune][target][table]") {
  TargetDescription t = zen4_like();
  t.read_curve = {{1, 1}};  // replaced, not added to
  cpu::CpuMeasurement m;
  m.bandwidth_gbs = 30;        // the 256 MiB stream caught a slow spell
  m.cache_bandwidth_gbs = 150;  // read at 16 MiB
  m.peak_gflops = 90;          // the plain FMAs caught one too ...
  m.widen_f16_gflops = 120;    // ... while FMAs that also widened reached more
  m.widen_bf16_gflops = 110;
  // 32 KiB read slower than 1 MiB did (disturbed); 128 MiB, past twice the caches, at 45 GB/s.
  m.read_curve = {{32 << 10, 250}, {1 << 20, 400}, {int64_t(128) << 20, 45}};
  cpu::apply_measurement(t, m, 16 << 20);
  CHECK(t.peak_gflops == 120);
  CHECK(cpu::cpu_features(t).widen_f16_gflops == 120);
  CHECK(cpu::cpu_features(t).widen_bf16_gflops == 110);
  const std::vector<std::pair<double, double>> curve = {{32 << 10, 400}, {1 << 20, 400}, {16 << 20, 150}, {double(int64_t(128) << 20), 45}};
  CHECK(t.read_curve == curve);
  // Memory's bandwidth is the better of the stream and the curve's point past the caches.
  CHECK(t.bandwidth_gbs == 45);
  CHECK(t.bandwidth_for(1024) == 400);
}

TEST_CASE("targets are named and parsed in one place", "[tune][target]") {
  for (Target t : {cpu::kTarget, cuda::kTarget}) CHECK(tune::parse_target(tune::target_name(t)) == t);
  CHECK(tune::target_name(cpu::kTarget) == std::string("cpu"));
  CHECK(tune::target_name(cuda::kTarget) == std::string("cuda"));
  CHECK_FALSE(tune::parse_target("gpu"));
  CHECK_FALSE(tune::parse_target("CPU"));
  CHECK_FALSE(tune::parse_target(""));
  // The built-in ones first; a test may have registered its own after them.
  CHECK_THAT(tune::target_names(), Catch::StartsWith("cpu, cuda"));
}

TEST_CASE("the H100 is described from its data sheet", "[tune][target]") {
  TargetDescription h = cuda_h100_data();
  CHECK(h.target == cuda::kTarget);
  CHECK_FALSE(h.measured);
  CHECK(h.cores == 132);
  CHECK(h.fast_memory_bytes == 227 * 1024);
  CHECK(h.bandwidth_gbs == 3350);
  CHECK(h.peak_gflops == 67000);
  CHECK(cuda::gpu_features(h).tensor_peak_gflops == 989000);  // f16 dense on tensor cores: the roofline's peak at 16-bit storage
  CHECK(cuda::gpu_features(h).arch == "compute_90");
  CHECK(h.tile_budget().fast_memory_bytes == h.fast_memory_bytes);
}

TEST_CASE("a description carries one backend's features, its defaults when none, never another's", "[tune][target]") {
  TargetDescription t;
  CHECK(cpu::cpu_features(std::as_const(t)).simd_bytes == 32);  // read: the defaults, nothing added
  CHECK_FALSE(t.features.has_value());
  cpu::cpu_features(t).simd_bytes = 64;                         // set: added
  TargetDescription copy = t;
  cpu::cpu_features(copy).simd_bytes = 32;                      // a copy's are its own
  CHECK(cpu::cpu_features(std::as_const(t)).simd_bytes == 64);
  CHECK_THROWS_WITH(cuda::gpu_features(std::as_const(t)), Catch::Contains("another backend's"));
  CHECK_THROWS_WITH(cuda::gpu_features(t), Catch::Contains("no GPU features"));
  CHECK_THROWS_AS(cpu::cpu_features(cuda_h100_data()), Error);
}

TEST_CASE("the caches serve a working set up to half of L3 plus the L2s, none from L3 plus the L2s on, part in between", "[tune][target]") {
  TargetDescription t = zen4_like();
  const double mib = 1 << 20;
  CHECK(t.cache_hit_fraction(8 * mib) == 1);
  CHECK(t.cache_hit_fraction(18 * mib) == 1);
  CHECK(t.cache_hit_fraction(30 * mib) == Approx(0.25));
  CHECK(t.cache_hit_fraction(34 * mib) == 0);
  CHECK(t.cache_hit_fraction(36 * mib) == 0);
  CHECK(t.cache_hit_fraction(64 * mib) == 0);
  CHECK(t.cache_hit_fraction(24 * mib) > t.cache_hit_fraction(32 * mib));
  CHECK(t.bandwidth_for(8 * mib) == 200);
  CHECK(t.bandwidth_for(64 * mib) == 40);
  // 26 MiB: half from the caches, half from memory, read one after the other.
  CHECK(t.bandwidth_for(26 * mib) == Approx(1 / (0.5 / 200 + 0.5 / 40)));
  t.cache_bandwidth_gbs = 0;  // not measured: memory's for everything
  CHECK(t.bandwidth_for(8 * mib) == 40);
  CHECK(t.cache_hit_fraction(8 * mib) == 1);
}

TEST_CASE("a measured read curve is interpolated in time per byte, memory's bandwidth beyond it", "[tune][target]") {
  TargetDescription t = zen4_like();
  const double mib = 1 << 20;
  t.read_curve = {{8 * mib, 200}, {16 * mib, 160}, {32 * mib, 64}, {64 * mib, 40}};
  CHECK(t.bandwidth_for(mib) == 200);
  CHECK(t.bandwidth_for(16 * mib) == Approx(160));
  CHECK(t.bandwidth_for(24 * mib) == Approx(1 / (0.5 / 160 + 0.5 / 64)));
  CHECK(t.bandwidth_for(128 * mib) == 40);
  CHECK(t.cache_hit_fraction(mib) == Approx(1));
  CHECK(t.cache_hit_fraction(128 * mib) == Approx(0));
  // 32 MiB at 64 GB/s: 1/64 = h/200 + (1-h)/40.
  CHECK(t.cache_hit_fraction(32 * mib) == Approx((1.0 / 40 - 1.0 / 64) / (1.0 / 40 - 1.0 / 200)));
}
