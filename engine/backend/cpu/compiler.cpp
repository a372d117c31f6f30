#include "engine/backend/cpu/compiler.h"

#include <dlfcn.h>
#include <sys/stat.h>
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
#include "engine/util/private_dir.h"
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

std::string host_compiler_identity() { return compiler_identity(compiler_of(CompileOptions{})); }

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

namespace {

// An ELF shared object's header: the magic and ET_DYN. What a compiler's -shared output starts with.
bool is_shared_object(const std::string& bytes) {
  return bytes.size() >= 18 && bytes.compare(0, 4, "\x7f" "ELF") == 0 && bytes[16] == 3 && bytes[17] == 0;
}

// The kernel cache held open: checked from the cache root down (docs/protocol.md "Security").
// The cache holds code this user will run, so it is refused when anyone else could have written
// to any directory of it.
PrivateDir open_kernel_cache(const CompileOptions& options) {
  const std::string dir = options.cache_dir.empty() ? default_kernel_cache_dir() : options.cache_dir;
  if (dir.empty()) throw Error(Error::Kind::Failed, "no kernel cache: set PRISM_CACHE_DIR or HOME");
  const auto [root, sub] = options.cache_dir.empty() ? std::pair{prism_cache_root(), std::string("kernels")}
                                                     : std::pair{options.cache_dir, std::string()};
  PrivateDir cache = PrivateDir::open(root, sub, /*create=*/true);
  if (!cache.ok()) throw Error(Error::Kind::Failed, "the kernel cache is unsafe: " + cache.error());
  return cache;
}

}  // namespace

CompiledLibrary compile_library(const std::string& source, const CompileOptions& options) {
  const std::string compiler = compiler_of(options);
  std::string key_text = compiler_identity(compiler) + "\x1c" + cpu_features();
  for (const auto& f : options.flags) key_text += "\x1f" + f;
  for (const auto& l : options.libs) key_text += "\x1e" + l;
  key_text += "\x1d" + source;
  CompiledLibrary result;
  result.key = content_key(key_text, "prism-kernel:");
  const PrivateDir cache = open_kernel_cache(options);
  const std::string name = result.key + ".so";
  result.path = cache.path() + "/" + name;
  if (const FileContents cached = read_sealed_file(cache, name, kMaxLibraryBytes); cached.bytes && is_shared_object(*cached.bytes)) {
    result.cached = true;
    return result;
  }
  // Missing, truncated (a kill -9 mid-write by an old prism), changed, or not a shared object (a
  // compiler of an older prism that exited 0 on garbage): built again, and the
  // rename below replaces it. The compiler runs in the cache directory itself (its descriptor),
  // with names relative to it: what it reads and writes is in the directory that was checked.
  static std::atomic<uint64_t> counter{0};
  const std::string stem = result.key + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const std::string src = stem + ".cpp", obj = stem + ".so";
  if (std::string problem = cache.write(src, source); !problem.empty()) throw Error(Error::Kind::Failed, problem);
  std::vector<std::string> argv{compiler};
  argv.insert(argv.end(), options.flags.begin(), options.flags.end());
  argv.insert(argv.end(), {"./" + src, "-o", "./" + obj});
  argv.insert(argv.end(), options.libs.begin(), options.libs.end());
  auto start = std::chrono::steady_clock::now();
  ProcessResult r;
  try {
    r = run_process(argv, "", {}, std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000)), cache.fd());
  } catch (const std::exception& e) {
    cache.remove(src);
    throw Error(Error::Kind::Failed, "cannot run the compiler '" + compiler + "': " + e.what());
  }
  result.compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  cache.remove(src);
  if (r.timed_out || r.exit_code != 0) {
    cache.remove(obj);
    if (r.timed_out)
      throw Error(Error::Kind::Failed, "the compiler '" + compiler + "' took more than " + std::to_string(int(options.timeout_s)) + " s");
    throw Error(Error::Kind::Failed, "the compiler '" + compiler + "' failed (exit " + std::to_string(r.exit_code) +
                                         "):\n" + first_lines(r.err + r.out, 12));
  }
  ::fchmodat(cache.fd(), obj.c_str(), 0600, 0);  // whatever the umask made it
  FileContents built = cache.read(obj, kMaxLibraryBytes);
  // A compiler that exits 0 yet wrote no shared object (a broken wrapper, a full disk) must not
  // leave an entry that every later load fails on.
  std::string problem = !built.bytes ? built.error
                        : !is_shared_object(*built.bytes)
                            ? "the compiler '" + compiler + "' exited 0 but wrote no shared object (" + std::to_string(built.bytes->size()) + " bytes)"
                            : write_seal(cache, name, *built.bytes);
  if (problem.empty()) problem = cache.rename(obj, name);
  if (!problem.empty()) {
    cache.remove(obj);
    throw Error(Error::Kind::Failed, "cannot store the compiled kernel: " + problem);
  }
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
  // Every directory from the cache root down is checked first, and held open: the bytes are read
  // through it, checked against the checksum written when prism built them, and loaded from a
  // private copy in that same directory, under a name used once, by a path through its
  // descriptor. What runs is exactly what was checked, in a directory nobody else can write,
  // whatever is renamed around it meanwhile (docs/protocol.md "Security"). (Not a memfd: the
  // loader would take a reused /proc/self/fd/N name for the library loaded under it before.)
  const fs::path file(path);
  const auto [root, sub] = cache_root_and_sub(file.parent_path().string());
  const PrivateDir dir = PrivateDir::open(root, sub);
  if (!dir.ok()) throw Error(Error::Kind::Failed, "cannot load the kernel library " + path + ": " + dir.error());
  FileContents bytes = read_sealed_file(dir, file.filename().string(), kMaxLibraryBytes);
  if (!bytes.bytes) throw Error(Error::Kind::Failed, "cannot load the kernel library: " + bytes.error);
  const std::string copy = temp_name_for(file.filename().string()) + ".so";
  if (std::string problem = dir.write(copy, *bytes.bytes); !problem.empty())
    throw Error(Error::Kind::Failed, "cannot load " + path + ": " + problem);
  // Never unmapped: a library that used OpenMP leaves idle pool threads whose code must stay.
  handle_ = ::dlopen(dir.fd_path(copy).c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  dir.remove(copy);  // the mapping keeps it alive
  if (!handle_) {
    const char* why = ::dlerror();
    // An entry that does not load is never served again: the next compile builds it anew.
    remove_sealed_file(dir, file.filename().string());
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

void compile_builds(std::vector<Build>& builds, const CompileOptions& options, int parallel) {
  std::vector<std::string> sources, errors;
  std::vector<size_t> which;
  for (size_t i = 0; i < builds.size(); ++i)
    if (builds[i].error.empty()) {
      sources.push_back(builds[i].source);
      which.push_back(i);
    }
  const std::vector<CompiledLibrary> libraries = compile_libraries(sources, options, std::max(1, parallel), &errors);
  for (size_t j = 0; j < which.size(); ++j) {
    Build& b = builds[which[j]];
    b.runnable = libraries[j].path;
    b.cached = libraries[j].cached;
    if (b.runnable.empty()) {
      b.error = errors[j];
      b.transient = true;
    }
  }
}

std::string compiled_library(const Build& build, const CompileOptions& options) {
  std::vector<Build> builds{build};
  compile_builds(builds, options, 1);
  if (!builds[0].error.empty()) throw Error(Error::Kind::Failed, builds[0].error);
  return builds[0].runnable;
}

}  // namespace prism::backend::cpu
