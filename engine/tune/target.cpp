#include "engine/tune/target.h"

#include "engine/backend/cuda/driver.h"

#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "engine/backend/cpu/compiler.h"
#include "engine/tune/cpu_measure.h"

namespace prism::tune {

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

int simd_bytes() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 64;
  if (__builtin_cpu_supports("avx2")) return 32;
  return 16;
}

const char* isa_name(int bytes) { return bytes == 64 ? "AVX-512" : bytes == 32 ? "AVX2" : "SSE"; }

// "|2": the file format with the last-level-cache bandwidth; older files are measured again.
std::string cache_key(const TargetDescription& t) { return t.model + "|" + std::to_string(t.cores) + "|" + PRISM_VERSION + "|2"; }

// The cache file: key=value lines; `key` must match for the measured values to be used.
bool read_cache(const fs::path& file, const std::string& key, TargetDescription& t) {
  std::ifstream in(file);
  std::map<std::string, std::string> kv;
  for (std::string line; std::getline(in, line);)
    if (size_t eq = line.find('='); eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  if (kv["key"] != key) return false;
  try {
    t.bandwidth_gbs = std::stod(kv.at("bandwidth_gbs"));
    t.peak_gflops = std::stod(kv.at("peak_gflops"));
    t.cache_bandwidth_gbs = std::stod(kv.at("cache_bandwidth_gbs"));
  } catch (const std::exception&) {
    return false;
  }
  return t.bandwidth_gbs > 0 && t.peak_gflops > 0;
}

// Written to a temporary name and renamed, so a concurrent reader never sees half a file.
void write_cache(const fs::path& file, const std::string& key, const TargetDescription& t) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    out.precision(17);
    out << "key=" << key << "\nmodel=" << t.model << "\ncores=" << t.cores << "\nbandwidth_gbs=" << t.bandwidth_gbs
        << "\ncache_bandwidth_gbs=" << t.cache_bandwidth_gbs << "\npeak_gflops=" << t.peak_gflops << "\n";
    if (!out) return;  // an unwritable cache only costs a measurement next time
  }
  fs::rename(tmp, file, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace

TargetDescription describe_cpu(const std::string& cache_dir) {
  TargetDescription t;
  t.name = "cpu";
  t.cores = cpu_cores();
  read_caches(t);
  t.simd_bytes = simd_bytes();
  t.model = cpu_model_name() + ", " + std::to_string(t.cores) + (t.cores == 1 ? " core, " : " cores, ") + isa_name(t.simd_bytes);
  // The tile budget of one block: half of L2, leaving the rest for the compiler's temporaries,
  // the next block's prefetched tiles and the other operands streaming through (an assumption).
  t.fast_memory_bytes = t.l2_bytes > 0 ? t.l2_bytes / 2 : 256 * 1024;
  t.measured = true;

  fs::path dir = cache_dir.empty() ? fs::path(backend::cpu::default_kernel_cache_dir()).parent_path() : fs::path(cache_dir);
  fs::path file = dir / "cpu-target.txt";
  const std::string key = cache_key(t);
  if (read_cache(file, key, t)) return t;
  MeasureOptions options;
  options.threads = t.cores;
  options.kernel_cache_dir = (dir / "kernels").string();
  // A quarter of the last-level cache: resident across passes, far larger than L2.
  options.cache_read_bytes = t.l3_bytes > 0 ? t.l3_bytes / 4 : 0;
  CpuMeasurement m = measure_cpu(options);
  t.bandwidth_gbs = m.bandwidth_gbs;
  t.peak_gflops = m.peak_gflops;
  t.cache_bandwidth_gbs = m.cache_bandwidth_gbs;
  write_cache(file, key, t);
  return t;
}

TargetDescription cuda_h100_data() {
  TargetDescription t;
  t.name = "cuda";
  t.model = "NVIDIA H100 SXM (data sheet)";
  t.cores = 132;                    // SMs: one block per SM at a time, the unit of parallelism
  t.l1_bytes = 256 * 1024;          // L1 + shared memory per SM
  t.l2_bytes = 0;                   // no per-SM second level
  t.l3_bytes = 50 * 1024 * 1024;    // the last-level cache shared by all SMs (the H100's L2)
  t.simd_bytes = 128;               // a warp: 32 lanes of f32
  t.bandwidth_gbs = 3350;           // HBM3
  t.peak_gflops = 67000;            // f32 FMA (non tensor core); 989 TFLOP/s fp16 dense on tensor cores
  t.fast_memory_bytes = 227 * 1024; // shared memory usable by one block (228 KiB per SM)
  t.measured = false;
  t.tensor_peak_gflops = 989000;    // f16/bf16 dense, tensor cores
  t.arch = "compute_90";
  return t;
}

TargetDescription describe_cuda_device() {
  backend::cuda::CudaDevice device;
  const backend::cuda::DeviceInfo& info = device.info();
  TargetDescription t = cuda_h100_data();
  std::string sheet = " (data-sheet bandwidth and peaks)";
  if (info.name.find("H200") != std::string::npos) {
    t.bandwidth_gbs = 4800;  // HBM3e
  } else if (info.name.find("H100") != std::string::npos && info.name.find("PCIe") != std::string::npos) {
    t.bandwidth_gbs = 2000;
    t.peak_gflops = 51000;
    t.tensor_peak_gflops = 756000;
  } else if (info.name.find("H100") == std::string::npos) {
    sheet = " (bandwidth and peaks assumed: an H100 SXM's)";
  }
  t.cores = info.sm_count;
  t.fast_memory_bytes = info.shared_per_block_optin > 0 ? info.shared_per_block_optin : info.shared_per_block;
  t.arch = info.arch();
  t.model = info.name + ", " + std::to_string(info.sm_count) + " SMs, compute capability " + std::to_string(info.cc_major) + "." +
            std::to_string(info.cc_minor) + sheet;
  return t;
}

}  // namespace prism::tune
