#include "engine/backend/cpu/describe.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cpu/measure.h"
#include "engine/error.h"
#include "engine/util/cache.h"
#include "engine/util/private_dir.h"

namespace prism::backend::cpu {

namespace fs = std::filesystem;

namespace {

int cpu_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? int(n) : 1;
}

std::string read_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "48K", "2048K", "32M" -> bytes; 0 when unreadable.
int64_t parse_size(const std::string& text) {
  try {
    size_t used = 0;
    int64_t v = std::stoll(text, &used);
    char unit = used < text.size() ? text[used] : ' ';
    return unit == 'K' ? v << 10 : unit == 'M' ? v << 20 : unit == 'G' ? v << 30 : v;
  } catch (const std::exception&) {
    return 0;
  }
}

// Data and unified caches of cpu0 by level. sysfs lists L1/L2 per core; L3 is the size of the
// cache cpu0 shares, taken as the total (one L3 per socket or core complex: an assumption).
void read_caches(TargetDescription& t) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    std::string type = read_line(entry.path() / "type");
    if (type == "Instruction") continue;
    int level = std::atoi(read_line(entry.path() / "level").c_str());
    int64_t size = parse_size(read_line(entry.path() / "size"));
    if (level == 1) t.l1_bytes = size;
    else if (level == 2) t.l2_bytes = size;
    else if (level == 3) t.l3_bytes = size;
  }
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      std::string name = colon == std::string::npos ? "" : line.substr(colon + 1);
      name.erase(0, name.find_first_not_of(" \t"));
      return name;
    }
  return "unknown CPU";
}

// vdpbf16ps, unless PRISM_CPU_DISABLE turns it off.
bool has_bf16_dot() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16")) return false;
  const std::vector<std::string> off = disabled_cpu_features();
  return std::find(off.begin(), off.end(), "avx512bf16") == off.end() && std::find(off.begin(), off.end(), "avx512f") == off.end();
}

// AMX-BF16 tiles, unless PRISM_CPU_DISABLE names amx-bf16 or amx-tile (its measurement says
// whether Linux grants them).
bool has_amx() {
  const std::vector<std::string> off = disabled_cpu_features();
  for (const char* name : {"amx-bf16", "amx-tile"})
    if (std::find(off.begin(), off.end(), name) != off.end()) return false;
  return true;
}

}  // namespace

const char* openblas_core_type() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

namespace {

int simd_bytes() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 64;
  if (__builtin_cpu_supports("avx2")) return 32;
  return 16;
}

const char* isa_name(int bytes) { return bytes == 64 ? "AVX-512" : bytes == 32 ? "AVX2" : "SSE"; }

constexpr const char* kCacheFile = "cpu-target.txt";

// "|10": the file format with the read curve (measured in huge pages, from the first levels' sizes
// on, at most twice apart from the second levels up to the last level's point, over trials no
// thread was interrupted in), vdpbf16ps's, AMX's and the widened FMAs' rates (each thread timed by
// its CPU time); older files, whose peaks a busy machine could have lowered, are measured again.
// "|11": the curve's points between the second levels and the last level's point at most twice
// apart whatever the last level's size (a 260 MiB L3 left a 2x gap before).
std::string cache_key(const TargetDescription& t) { return t.model + "|" + std::to_string(t.cores) + "|" + PRISM_VERSION + "|11"; }

// "bytes:gbs,bytes:gbs,…"
std::string curve_text(const std::vector<std::pair<double, double>>& curve) {
  std::ostringstream out;
  out.precision(17);
  for (size_t i = 0; i < curve.size(); ++i) out << (i ? "," : "") << curve[i].first << ":" << curve[i].second;
  return out.str();
}

std::vector<std::pair<double, double>> parse_curve(const std::string& text) {
  std::vector<std::pair<double, double>> curve;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t colon = item.find(':');
    if (colon == std::string::npos) throw std::invalid_argument("read_curve item without ':'");
    curve.emplace_back(std::stod(item.substr(0, colon)), std::stod(item.substr(colon + 1)));
  }
  return curve;
}

// Ascending in bytes, and a smaller set reads at least as fast as a larger one did: a pass
// disturbed by another process lowered its point, not what the machine reaches (docs/tuning.md,
// "Peaks").
void make_monotone(std::vector<std::pair<double, double>>& curve) {
  std::sort(curve.begin(), curve.end());
  for (size_t i = curve.size(); i-- > 1;) curve[i - 1].second = std::max(curve[i - 1].second, curve[i].second);
}

// The cache file: key=value lines; `key` must match for the measured values to be used.
bool read_cache(const PrivateDir& dir, const std::string& file, const std::string& key, TargetDescription& t) {
  FileContents text = dir.read(file, 1 << 16);
  if (!text.bytes) return false;
  std::istringstream in(*text.bytes);
  std::map<std::string, std::string> kv;
  for (std::string line; std::getline(in, line);)
    if (size_t eq = line.find('='); eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  if (kv["key"] != key) return false;
  try {
    t.bandwidth_gbs = std::stod(kv.at("bandwidth_gbs"));
    t.peak_gflops = std::stod(kv.at("peak_gflops"));
    CpuFeatures& cpu = cpu_features(t);
    cpu.bf16_dot_gflops = std::stod(kv.at("bf16_dot_gflops"));
    cpu.bf16_amx_gflops = std::stod(kv.at("bf16_amx_gflops"));
    cpu.widen_f16_gflops = std::stod(kv.at("widen_f16_gflops"));
    cpu.widen_bf16_gflops = std::stod(kv.at("widen_bf16_gflops"));
    t.cache_bandwidth_gbs = std::stod(kv.at("cache_bandwidth_gbs"));
    t.read_curve = parse_curve(kv["read_curve"]);
  } catch (const std::exception&) {
    return false;
  }
  return t.bandwidth_gbs > 0 && t.peak_gflops > 0;
}

// Written whole (private_files.h): a concurrent reader never sees half a file.
void write_cache(const PrivateDir& dir, const std::string& file, const std::string& key, const TargetDescription& t) {
  const CpuFeatures& cpu = cpu_features(t);
  std::ostringstream out;
  out.precision(17);
  out << "key=" << key << "\nmodel=" << t.model << "\ncores=" << t.cores << "\nbandwidth_gbs=" << t.bandwidth_gbs
      << "\ncache_bandwidth_gbs=" << t.cache_bandwidth_gbs << "\npeak_gflops=" << t.peak_gflops
      << "\nbf16_dot_gflops=" << cpu.bf16_dot_gflops << "\nbf16_amx_gflops=" << cpu.bf16_amx_gflops
      << "\nwiden_f16_gflops=" << cpu.widen_f16_gflops << "\nwiden_bf16_gflops=" << cpu.widen_bf16_gflops
      << "\nread_curve=" << curve_text(t.read_curve) << "\n";
  dir.write(file, out.str());  // a failure costs a measurement next time
}

// Sizes from past the second levels' capacity `l2_all` up to (without) the last level's point
// `last`: 1.5x and 2x the capacity, then a geometric series whose steps are at most 2x and whose
// next step lands on `last`, none within 0.75x of it. Each point is a few passes over its set.
std::vector<double> between_levels(double l2_all, double last) {
  std::vector<double> sizes;
  if (1.5 * l2_all < 0.75 * last) sizes.push_back(1.5 * l2_all);
  const double first = 2 * l2_all;
  if (first >= 0.75 * last) return sizes;
  const int steps = int(std::ceil(std::log2(last / first)));
  const double ratio = std::pow(last / first, 1.0 / steps);
  for (int i = 0; i < steps; ++i) sizes.push_back(first * std::pow(ratio, i));
  return sizes;
}

// Bandwidths, the read curve and the peaks, measured here.
void measure(TargetDescription& t, const fs::path& dir) {
  MeasureOptions options;
  options.threads = t.cores;
  options.kernel_cache_dir = (dir / "kernels").string();
  // A quarter of the last-level cache: resident across passes, far larger than L2. The curve:
  // from half of it to twice the caches' capacity, where sets stop fitting.
  options.cache_read_bytes = t.l3_bytes > 0 ? t.l3_bytes / 4 : 0;
  if (t.l3_bytes > 0)
    for (double f : {0.5, 0.75, 1.0, 1.25, 1.5, 2.0}) options.curve_bytes.push_back(int64_t(f * t.cache_capacity()) / 64 * 64);
  // And below it, sets that the cores' second levels hold between passes (each thread reads its
  // own part): many cores read them several times faster than the last level (docs/tuning.md,
  // "The flow of one `tune`", step 1).
  const double l2_all = double(t.l2_bytes) * t.cores;
  if (t.l2_bytes > 0 && t.l3_bytes > 0)
    for (double f : {0.5, 1.0}) options.curve_bytes.push_back(int64_t(f * l2_all) / 64 * 64);
  // And the first levels' sizes: a set they hold reads faster still, and below the curve's first
  // point the roofline reads at that point's rate.
  if (t.l1_bytes > 0 && t.l2_bytes > 0 && t.l3_bytes > 0)
    for (double f : {0.5, 1.0}) options.curve_bytes.push_back(int64_t(f * double(t.l1_bytes) * t.cores) / 64 * 64);
  // And between the second levels and the last level's point, sizes at most twice apart: the curve
  // is interpolated between its points, and the fall from the second levels' rate to the last
  // level's is steep (same step).
  if (t.l2_bytes > 0 && options.cache_read_bytes > 0)
    for (double bytes : between_levels(l2_all, double(options.cache_read_bytes))) options.curve_bytes.push_back(int64_t(bytes) / 64 * 64);
  apply_measurement(t, measure_cpu(options), options.cache_read_bytes);
}

}  // namespace

void apply_measurement(TargetDescription& t, const CpuMeasurement& m, int64_t cache_read_bytes) {
  CpuFeatures& cpu = cpu_features(t);
  t.bandwidth_gbs = m.bandwidth_gbs;
  cpu.bf16_dot_gflops = m.bf16_dot_gflops;
  cpu.bf16_amx_gflops = m.bf16_amx_gflops;
  // FMAs that reached a rate while widening B reach it without: a measurement of the plain FMAs
  // that came out lower caught a slower spell, and the roofline's peak is what was reached.
  t.peak_gflops = std::max({m.peak_gflops, m.widen_f16_gflops, m.widen_bf16_gflops});
  cpu.widen_f16_gflops = m.widen_f16_gflops;
  cpu.widen_bf16_gflops = m.widen_bf16_gflops;
  t.cache_bandwidth_gbs = m.cache_bandwidth_gbs;
  t.read_curve.clear();
  if (m.cache_bandwidth_gbs > 0) t.read_curve.emplace_back(double(cache_read_bytes), m.cache_bandwidth_gbs);
  for (const auto& point : m.read_curve) t.read_curve.push_back(point);
  make_monotone(t.read_curve);
  // Memory's bandwidth: the best stream of a set the caches cannot hold (256 MiB, or the curve's
  // last point at twice their capacity); on this VM one or the other is often disturbed.
  if (!t.read_curve.empty() && t.read_curve.back().first >= 2 * t.cache_capacity() - 64)
    t.bandwidth_gbs = std::max(t.bandwidth_gbs, t.read_curve.back().second);
}

TargetDescription describe_cpu(const std::string& cache_dir) {
  TargetDescription t;
  t.target = kTarget;
  t.cores = cpu_cores();
  read_caches(t);
  CpuFeatures& cpu = cpu_features(t);
  cpu.simd_bytes = simd_bytes();
  t.model = cpu_model_name() + ", " + std::to_string(t.cores) + (t.cores == 1 ? " core, " : " cores, ") + isa_name(cpu.simd_bytes);
  t.toolchain = host_compiler_identity();
  // The tile budget of one block: half of L2, leaving the rest for the compiler's temporaries,
  // the next block's prefetched tiles and the other operands streaming through (an assumption).
  t.fast_memory_bytes = t.l2_bytes > 0 ? t.l2_bytes / 2 : 256 * 1024;
  // Past it, where nothing fits: the last level's share of one core, whose tiles still come from
  // a cache (docs/tuning.md, "Tiles past the budget").
  t.spill_tile_bytes = t.l3_bytes / t.cores;  // spill_budget() takes the larger of the two
  t.measured = true;

  const fs::path dir = cache_dir.empty() ? prism_cache_root() : cache_dir;
  // $PRISM_CPU_DESCRIPTION names the file in place of <cache>/cpu-target.txt: daemons with caches
  // of their own on one host (Dask workers', tests') share one measurement (docs/tuning.md, "Peaks").
  const std::string shared = env_or("PRISM_CPU_DESCRIPTION", "");
  const fs::path file = shared.empty() ? dir / kCacheFile : fs::absolute(shared);
  // Read and written only through a checked directory (docs/protocol.md "Security"): a
  // description planted by someone who could write there would skew every roofline and cost.
  const PrivateDir cache = PrivateDir::open(file.parent_path().string(), "", /*create=*/true);
  if (!cache.ok()) throw Error(Error::Kind::Failed, "the CPU description's cache is unsafe: " + cache.error());
  const std::string key = cache_key(t);
  if (!read_cache(cache, file.filename().string(), key, t)) {
    measure(t, dir);
    write_cache(cache, file.filename().string(), key, t);
  }
  // vdpbf16ps replaces an FMA pair and the widening of B; at less than the FMA's flop rate
  // (Sapphire Rapids: half) widening is faster, and bf16 matmuls widen.
  cpu.bf16_dot_peak_gflops = has_bf16_dot() && cpu.bf16_dot_gflops >= t.peak_gflops ? cpu.bf16_dot_gflops : 0;
  if (!has_amx()) cpu.bf16_amx_gflops = 0;
  return t;
}

}  // namespace prism::backend::cpu
