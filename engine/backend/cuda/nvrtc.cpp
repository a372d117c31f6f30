#include "engine/backend/cuda/nvrtc.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "engine/error.h"
#include "engine/util/cache.h"
#include "engine/util/private_files.h"
#include "engine/util/sealed_file.h"

namespace prism::backend::cuda {

namespace fs = std::filesystem;

namespace {

// Generated modules are some hundred KiB of PTX.
constexpr size_t kMaxPtxBytes = size_t(256) << 20;

// The NVRTC API, declared here so that prism needs no toolkit headers to build.
using nvrtcResult = int;
using nvrtcProgram = void*;
using VersionFn = nvrtcResult (*)(int*, int*);
using CreateFn = nvrtcResult (*)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
using CompileFn = nvrtcResult (*)(nvrtcProgram, int, const char* const*);
using SizeFn = nvrtcResult (*)(nvrtcProgram, size_t*);
using TextFn = nvrtcResult (*)(nvrtcProgram, char*);
using DestroyFn = nvrtcResult (*)(nvrtcProgram*);
using ErrorStringFn = const char* (*)(nvrtcResult);

struct Nvrtc {
  bool ok = false;
  std::string detail, path, include_dir;
  VersionFn version = nullptr;
  CreateFn create = nullptr;
  CompileFn compile = nullptr;
  SizeFn ptx_size = nullptr, log_size = nullptr;
  TextFn ptx = nullptr, log = nullptr;
  DestroyFn destroy = nullptr;
  ErrorStringFn error_string = nullptr;

  std::string error(nvrtcResult r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    return s ? s : "NVRTC error " + std::to_string(r);
  }
};

// The toolkit's include directory (for cuda_fp16.h): $CUDA_HOME, $CUDA_PATH, next to the
// library that was opened, /usr/local/cuda.
std::string find_include_dir(const std::string& library_path) {
  std::vector<fs::path> candidates;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (auto dir = env_or(var, ""); !dir.empty()) candidates.push_back(fs::path(dir) / "include");
  if (!library_path.empty()) {
    std::error_code ec;
    fs::path lib = fs::canonical(library_path, ec);
    if (!ec) candidates.push_back(lib.parent_path().parent_path() / "include");
  }
  candidates.push_back("/usr/local/cuda/include");
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (fs::exists(dir / "cuda_fp16.h", ec)) return dir.string();
  }
  return "";
}

template <class Fn>
bool bind(void* handle, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (!fn && missing.empty()) missing = name;
  return fn != nullptr;
}

Nvrtc open_nvrtc() {
  Nvrtc n;
  std::string tried;
  void* handle = nullptr;
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"}) {
    handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      n.path = name;
      break;
    }
    tried += tried.empty() ? name : std::string(", ") + name;
  }
  if (!handle) {
    n.detail = "NVRTC not found: none of " + tried + " could be opened";
    return n;
  }
  // The file actually opened, for the include directory next to it.
  if (void* sym = ::dlsym(handle, "nvrtcVersion")) {
    Dl_info info{};
    if (::dladdr(sym, &info) && info.dli_fname) n.path = info.dli_fname;
  }
  std::string missing;
  bind(handle, "nvrtcVersion", n.version, missing);
  bind(handle, "nvrtcCreateProgram", n.create, missing);
  bind(handle, "nvrtcCompileProgram", n.compile, missing);
  bind(handle, "nvrtcGetPTXSize", n.ptx_size, missing);
  bind(handle, "nvrtcGetPTX", n.ptx, missing);
  bind(handle, "nvrtcGetProgramLogSize", n.log_size, missing);
  bind(handle, "nvrtcGetProgramLog", n.log, missing);
  bind(handle, "nvrtcDestroyProgram", n.destroy, missing);
  bind(handle, "nvrtcGetErrorString", n.error_string, missing);
  if (!missing.empty()) {
    n.detail = "NVRTC not usable: " + n.path + " has no " + missing;
    return n;
  }
  int major = 0, minor = 0;
  if (n.version(&major, &minor) != 0) {
    n.detail = "NVRTC not usable: nvrtcVersion failed in " + n.path;
    return n;
  }
  n.include_dir = find_include_dir(n.path);
  n.ok = true;
  n.detail = "NVRTC " + std::to_string(major) + "." + std::to_string(minor) + " (" + n.path + ")";
  if (n.include_dir.empty()) n.detail += ", no toolkit include directory found (cuda_fp16.h)";
  return n;
}

const Nvrtc& nvrtc() {
  static const Nvrtc n = open_nvrtc();
  return n;
}

// Runs NVRTC on the source: the PTX and the log, or Error{Failed} with the log's first lines.
PtxResult run_nvrtc(const Nvrtc& n, const std::string& source, const std::vector<std::string>& options) {
  nvrtcProgram prog = nullptr;
  if (nvrtcResult r = n.create(&prog, source.c_str(), "prism_kernels.cu", 0, nullptr, nullptr); r != 0)
    throw Error(Error::Kind::Failed, "NVRTC cannot create a program: " + n.error(r));
  struct Guard {
    const Nvrtc& n;
    nvrtcProgram& p;
    ~Guard() { n.destroy(&p); }
  } guard{n, prog};
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  nvrtcResult compiled = n.compile(prog, int(argv.size()), argv.data());
  PtxResult result;
  size_t size = 0;
  if (n.log_size(prog, &size) == 0 && size > 1) {
    result.log.resize(size);
    n.log(prog, result.log.data());
    result.log.resize(size - 1);
  }
  if (compiled != 0)
    throw Error(Error::Kind::Failed, "NVRTC failed to compile the kernel source (" + n.error(compiled) + "):\n" + first_lines(result.log, 12));
  if (nvrtcResult r = n.ptx_size(prog, &size); r != 0) throw Error(Error::Kind::Failed, "NVRTC gave no PTX: " + n.error(r));
  result.ptx.resize(size);
  if (nvrtcResult r = n.ptx(prog, result.ptx.data()); r != 0) throw Error(Error::Kind::Failed, "NVRTC gave no PTX: " + n.error(r));
  if (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();
  return result;
}

}  // namespace

NvrtcStatus nvrtc_status() {
  const Nvrtc& n = nvrtc();
  return {n.ok, n.detail};
}

std::string default_ptx_cache_dir() {
  return prism_cache_dir("ptx");
}

std::vector<std::string> nvrtc_options(const std::string& arch) {
  std::vector<std::string> o{"--gpu-architecture=" + arch, "-std=c++17"};
  if (const std::string& inc = nvrtc().include_dir; !inc.empty()) o.push_back("--include-path=" + inc);
  return o;
}

PtxResult compile_for_review(const std::string& source, const std::string& arch) {
  const Nvrtc& n = nvrtc();
  if (!n.ok) throw Error(Error::Kind::Failed, n.detail);
  std::vector<std::string> options = nvrtc_options(arch);
  options.push_back("--ptxas-options=-v");
  return run_nvrtc(n, source, options);
}

PtxResult compile_to_ptx(const std::string& source, const std::string& arch, const std::string& cache_dir) {
  const Nvrtc& n = nvrtc();
  if (!n.ok) throw Error(Error::Kind::Failed, n.detail);
  const std::vector<std::string> options = nvrtc_options(arch);
  std::string key_text = n.detail;
  for (const std::string& o : options) key_text += "\x1f" + o;
  key_text += "\x1d" + source;
  const std::string key = content_key(key_text, "prism-ptx:");
  // The PTX runs on the GPU as this user: the cache is checked from its root down and used through
  // its descriptor (docs/protocol.md "Security"), and each entry must be whole.
  const PrivateDir cache = cache_dir.empty() ? PrivateDir::open(prism_cache_root(), "ptx", /*create=*/true)
                                             : PrivateDir::open(cache_dir, "", /*create=*/true);
  const std::string name = key + ".ptx";
  if (cache.ok()) {
    FileContents file = read_sealed_file(cache, name, kMaxPtxBytes);
    if (file.bytes && !file.bytes->empty()) {
      PtxResult cached;
      cached.ptx = std::move(*file.bytes);
      cached.cached = true;
      return cached;
    }
  }
  PtxResult result = run_nvrtc(n, source, options);
  // An unusable cache costs a compile next time, nothing else.
  if (cache.ok() && write_seal(cache, name, result.ptx).empty()) cache.write(name, result.ptx);
  return result;
}

}  // namespace prism::backend::cuda
