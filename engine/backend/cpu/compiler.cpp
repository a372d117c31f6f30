#include "engine/backend/cpu/compiler.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "engine/error.h"
#include "engine/util/cache.h"
#include "engine/util/private_files.h"
#include "engine/util/process.h"
#include "engine/util/sealed_file.h"

namespace prism::backend::cpu {

namespace fs = std::filesystem;

namespace {

// A generated kernel library is some hundred KiB; anything near this is not one of ours.
constexpr size_t kMaxLibraryBytes = size_t(256) << 20;

std::string compiler_of(const CompileOptions& options) {
  return !options.compiler.empty() ? options.compiler : env_or("CXX", "c++");
}

// `c++ --version`'s first line, once per compiler: part of the cache key.
std::string compiler_identity(const std::string& compiler) {
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  std::lock_guard lock(mutex);
  if (auto it = known.find(compiler); it != known.end()) return it->second;
  std::string id = compiler;
  try {
    ProcessResult r = run_process({compiler, "--version"}, "", {}, std::chrono::seconds(30));
    id.append("|").append(r.out, 0, r.out.find('\n'));
  } catch (const std::exception&) {
  }
  return known[compiler] = id;
}

// The instruction-set extensions of this CPU (/proc/cpuinfo's flags), once: part of the cache
// key, since -march=native compiles for them, so a cache shared with another machine never
// hands back code for instructions this one lacks.
const std::string& cpu_features() {
  static const std::string features = [] {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("flags", 0) == 0) return line.substr(line.find(':') == std::string::npos ? 0 : line.find(':') + 1);
    return std::string();
  }();
  return features;
}

}  // namespace

std::vector<std::string> disabled_cpu_features() {
  std::vector<std::string> out;
  std::istringstream list(env_or("PRISM_CPU_DISABLE", ""));
  for (std::string name; std::getline(list, name, ',');) {
    const bool valid = !name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") == std::string::npos;
    if (!valid) throw Error(Error::Kind::InvalidArgument, "PRISM_CPU_DISABLE: '" + name + "' is no instruction-set name (e.g. avx512bf16,f16c)");
    out.push_back(name);
  }
  return out;
}

std::vector<std::string> emulated_cpu_feature_flags() {
  std::vector<std::string> out;
  std::istringstream list(env_or("PRISM_CPU_EMULATE", ""));
  for (std::string name; std::getline(list, name, ',');) {
    if (name != "avx512bf16") throw Error(Error::Kind::InvalidArgument, "PRISM_CPU_EMULATE: '" + name + "' cannot be emulated (only avx512bf16)");
    out.push_back("-DPRISM_EMULATE_AVX512BF16");
  }
  return out;
}

std::string default_kernel_cache_dir() {
  return prism_cache_dir("kernels");
}

CompiledLibrary compile_library(const std::string& source, const CompileOptions& options) {
  const std::string compiler = compiler_of(options);
  std::string key_text = compiler_identity(compiler) + "\x1c" + cpu_features();
  for (const auto& f : options.flags) key_text += "\x1f" + f;
  for (const auto& l : options.libs) key_text += "\x1e" + l;
  key_text += "\x1d" + source;
  CompiledLibrary result;
  result.key = content_key(key_text, "prism-kernel:");
  const fs::path dir = options.cache_dir.empty() ? default_kernel_cache_dir() : options.cache_dir;
  if (dir.empty()) throw Error(Error::Kind::Failed, "no kernel cache: set PRISM_CACHE_DIR or HOME");
  // The cache holds code this user will run: refused when anyone else could have written to it.
  if (std::string problem = ensure_private_dir(dir.string()); !problem.empty())
    throw Error(Error::Kind::Failed, "the kernel cache is unsafe: " + problem);
  result.path = (dir / (result.key + ".so")).string();
  FileContents cached = read_sealed_file(result.path, kMaxLibraryBytes);
  if (cached.bytes) {
    result.cached = true;
    return result;
  }
  // Missing, truncated (a kill -9 mid-write by an old prism) or changed: built again, and the
  // rename below replaces it.
  std::error_code ec;

  static std::atomic<uint64_t> counter{0};
  const std::string stem = result.key + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const fs::path src = dir / (stem + ".cpp"), obj = dir / (stem + ".so");
  {
    std::ofstream out(src);
    out << source;
    if (!out) throw Error(Error::Kind::Failed, "cannot write " + src.string());
  }
  std::vector<std::string> argv{compiler};
  argv.insert(argv.end(), options.flags.begin(), options.flags.end());
  argv.insert(argv.end(), {src.string(), "-o", obj.string()});
  argv.insert(argv.end(), options.libs.begin(), options.libs.end());
  auto start = std::chrono::steady_clock::now();
  ProcessResult r;
  try {
    r = run_process(argv, "", {}, std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000)));
  } catch (const std::exception& e) {
    fs::remove(src, ec);
    throw Error(Error::Kind::Failed, "cannot run the compiler '" + compiler + "': " + e.what());
  }
  result.compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fs::remove(src, ec);
  if (r.timed_out || r.exit_code != 0) {
    fs::remove(obj, ec);
    if (r.timed_out)
      throw Error(Error::Kind::Failed, "the compiler '" + compiler + "' took more than " + std::to_string(int(options.timeout_s)) + " s");
    throw Error(Error::Kind::Failed, "the compiler '" + compiler + "' failed (exit " + std::to_string(r.exit_code) +
                                         "):\n" + first_lines(r.err + r.out, 12));
  }
  FileContents built = read_regular_file(obj.string(), kMaxLibraryBytes);
  std::string problem = built.bytes ? write_seal(result.path, *built.bytes) : built.error;
  if (!problem.empty()) {
    fs::remove(obj, ec);
    throw Error(Error::Kind::Failed, "cannot record the compiled kernel's checksum: " + problem);
  }
  fs::rename(obj, result.path, ec);
  if (ec) throw Error(Error::Kind::Failed, "cannot move the compiled kernel into " + result.path + ": " + ec.message());
  return result;
}

std::vector<CompiledLibrary> compile_libraries(const std::vector<std::string>& sources, const CompileOptions& options,
                                               int parallel, std::vector<std::string>* errors) {
  std::vector<CompiledLibrary> results(sources.size());
  std::vector<std::string> messages(sources.size());
  tbb::task_arena arena(parallel > 0 ? parallel : tbb::task_arena::automatic);
  arena.execute([&] {
    tbb::parallel_for(size_t(0), sources.size(), [&](size_t i) {
      try {
        results[i] = compile_library(sources[i], options);
      } catch (const std::exception& e) {
        messages[i] = e.what();
      }
    });
  });
  if (errors) *errors = std::move(messages);
  return results;
}

LoadedLibrary::LoadedLibrary(const std::string& path) : path_(path) {
  // The bytes are checked against the checksum written when prism built them and loaded from a
  // private copy under a name used once: what runs is exactly what was checked, whatever happens
  // to the cache file meanwhile. (Not a memfd: the loader would take a reused /proc/self/fd/N
  // name for the library loaded under it before.)
  FileContents file = read_sealed_file(path, kMaxLibraryBytes);
  if (!file.bytes) throw Error(Error::Kind::Failed, "cannot load the kernel library: " + file.error);
  const std::string copy = temp_name_for(path) + ".so";
  if (std::string problem = write_file_atomically(copy, *file.bytes); !problem.empty())
    throw Error(Error::Kind::Failed, "cannot load " + path + ": " + problem);
  // Never unmapped: a library that used OpenMP leaves idle pool threads whose code must stay.
  handle_ = ::dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  ::unlink(copy.c_str());  // the mapping keeps it alive
  if (!handle_) {
    const char* why = ::dlerror();
    throw Error(Error::Kind::Failed, "cannot load " + path + ": " + (why ? why : "unknown error"));
  }
}

LoadedLibrary::~LoadedLibrary() {
  if (handle_) ::dlclose(handle_);
}

void* LoadedLibrary::symbol(const std::string& name) const {
  ::dlerror();
  void* p = ::dlsym(handle_, name.c_str());
  if (!p) throw Error(Error::Kind::Failed, "'" + name + "' is not defined in " + path_);
  return p;
}

}  // namespace prism::backend::cpu
