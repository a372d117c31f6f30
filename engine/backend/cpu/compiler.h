// Compiling generated C++ into shared objects with the host compiler, cached on disk by content:
// the cache key is a hash of the compiler's identity, this CPU's features, the flags and the
// source, so the same kernel is never compiled twice (across daemon restarts too), and a changed
// compiler, CPU or flag set never reuses a stale object. Objects are written to a temporary name and renamed into place, so
// concurrent compiles of the same source (threads or processes) are safe. Every directory from the
// cache root down is checked before each compile and each load, and both go through the checked
// directory's descriptor (engine/util/private_dir.h, docs/protocol.md "Security").
#pragma once
#include <string>
#include <vector>

#include "engine/backend/backend.h"

namespace prism::backend::cpu {

struct CompileOptions {
  std::string cache_dir;         // empty: default_kernel_cache_dir()
  std::string compiler;          // empty: $CXX, else "c++"
  // -mprefer-vector-width=512: GCC's loops over ops (exp and friends through libmvec) use AVX-512
  // where the CPU has it, not its default 256-bit (docs/tuning.md, "The CPU's other kernel
  // choices"). No effect without AVX-512.
  std::vector<std::string> flags = {"-std=c++17", "-O3", "-march=native", "-mprefer-vector-width=512", "-fopenmp", "-fPIC", "-shared"};
  std::vector<std::string> libs;  // linked after the source, e.g. "-lopenblas"
  double timeout_s = 120;
};

struct CompiledLibrary {
  std::string path;      // the shared object in the cache
  std::string key;       // its content hash (hex)
  bool cached = false;   // found in the cache, nothing compiled
  double compile_s = 0;  // 0 when cached
};

// The compiler kernels are built with by default ($CXX, else c++), with its `--version`'s first
// line: "c++|c++ (Debian 12.2.0-14) 12.2.0".
std::string host_compiler_identity();
// $PRISM_CACHE_DIR/kernels, else $XDG_CACHE_HOME/prism/kernels, else ~/.cache/prism/kernels.
std::string default_kernel_cache_dir();

// Instruction-set extensions the generated code must not use although this CPU has them:
// $PRISM_CPU_DISABLE, a comma list of GCC's names ("avx512bf16,f16c"), compiled as -mno-NAME (so a
// test takes the fallback paths a CPU without them would). Throws Error{InvalidArgument} for a
// name that is not one.
std::vector<std::string> disabled_cpu_features();
// Instructions the generated code should use although this CPU lacks them, each emulated by the
// instructions it replaces (so a test runs the code paths a CPU with them takes):
// $PRISM_CPU_EMULATE, a comma list; "avx512bf16" (vdpbf16ps as two FMAs) is the one known, compiled
// as -DPRISM_EMULATE_AVX512BF16. Throws Error{InvalidArgument} for any other name.
std::vector<std::string> emulated_cpu_feature_flags();

// Throws Error{Failed} with the compiler's diagnostics (the first lines) when it fails or times out.
CompiledLibrary compile_library(const std::string& source, const CompileOptions& options = {});

// Several at once, at most `parallel` compilers running (0: hardware threads). Element i is the
// result for sources[i], or its error message in `errors[i]` (then path is empty).
std::vector<CompiledLibrary> compile_libraries(const std::vector<std::string>& sources, const CompileOptions& options,
                                               int parallel, std::vector<std::string>* errors);

// What a host backend's compile() does (backend.h): every build without an error compiled, its
// runnable the shared object, or its error (transient: a compiler's failure is not the
// candidate's verdict).
void compile_builds(std::vector<Build>& builds, const CompileOptions& options, int parallel);
// And its library(): one build's shared object; throws Error{Failed} with the compiler's error.
std::string compiled_library(const Build& build, const CompileOptions& options);

// A loaded shared object (dlopen RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE: a kernel built with
// OpenMP leaves pool threads behind, so its code is never unmapped).
class LoadedLibrary {
 public:
  // Throws Error{Failed} with dlerror(), or when the library's directory (from prism's cache root
  // down, when it lies below it) is not private, or the bytes do not match their checksum.
  explicit LoadedLibrary(const std::string& path);
  ~LoadedLibrary();
  LoadedLibrary(const LoadedLibrary&) = delete;
  LoadedLibrary& operator=(const LoadedLibrary&) = delete;
  // Throws Error{Failed} when the symbol is missing.
  void* symbol(const std::string& name) const;
  template <class Fn>
  Fn function(const std::string& name) const { return reinterpret_cast<Fn>(symbol(name)); }

 private:
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace prism::backend::cpu
