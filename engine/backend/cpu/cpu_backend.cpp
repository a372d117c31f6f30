#include "engine/backend/cpu/cpu_backend.h"

#include <utility>
#include <vector>

#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/codegen.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cpu/cost_rules.h"
#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/describe.h"
#include "engine/backend/cpu/library_run.h"
#include "engine/error.h"
#include "engine/backend/cpu/eager.h"

namespace prism::backend::cpu {

Backend::Availability CpuBackend::availability() const { return {true, "this machine's CPU (measured on first use)"}; }

TargetDescription CpuBackend::describe(const std::string& cache_dir) const {
  TargetDescription t = describe_cpu(cache_dir);
  t.target = target();
  return t;
}

int CpuBackend::threads(int requested, const TargetDescription& target) const { return requested > 0 ? requested : target.cores; }

// Tensors keep their declared dtypes (issue 18): 16-bit storage is widened as it is loaded.
Program CpuBackend::stored(const Program& lowered) const { return lowered; }

sgraph::SGraph CpuBackend::stored(const sgraph::SGraph& family) const { return family; }

namespace {

CodegenOptions codegen_options(const TargetDescription& target) {
  CodegenOptions options;
  options.simd_bytes = cpu_features(target).simd_bytes;
  options.cores = target.cores;
  options.amx = cpu_features(target).bf16_amx_gflops > 0;
  options.cache_bytes = int64_t(target.cache_capacity());
  return options;
}

}  // namespace

kir::Program CpuBackend::kernel_ir(const sgraph::Instance& instance, const TargetDescription& target, const Schedule& schedule) const {
  resolve_schedule(schedule, target);
  return cpu_kernel_ir(instance, codegen_options(target));
}

Build CpuBackend::generate(const sgraph::Instance& instance, const TargetDescription& target, const Schedule& schedule) const {
  return make_build("cannot generate code", [&](Build& b) {
    const CodegenOptions options = codegen_options(target);
    b.source = generate_cpu_source(kernel_ir(instance, target, schedule), options);
  });
}

Build CpuBackend::eager(const Program& stored, const DimBindings& dims) const {
  return make_build("the eager baseline", [&](Build& b) {
    b.source = generate_eager_source(stored, dims);
    b.note = eager_note(stored);
  });
}

Build CpuBackend::fault(const std::string& kind) const {
  const char* body = kind == "crash"  ? "  volatile int* p = nullptr;\n  *p = 1;\n"
                     : kind == "hang" ? "  for (volatile int spin = 0;; spin = spin + 1) {}\n"
                                      : nullptr;
  if (!body) return Backend::fault(kind);
  Build b;
  b.source = std::string(
                 "// planted by PRISM_FAULT_INJECT\nextern \"C\" const char* prism_error() { return \"\"; }\n"
                 "extern \"C\" int prism_entry(const void* const*, void* const*, int) {\n") +
             body + "  return 0;\n}\n";
  return b;
}

// One compiler run per source, in parallel; every library links OpenBLAS (the eager baseline's
// matmul) the way eager_libs() says. bf16 x bf16 matmuls widen to f32 FMAs unless the target's
// vdpbf16ps is faster (codegen_matmul.cpp).
CompileOptions kernel_compile_options(const TargetDescription& target, const std::string& cache_dir) {
  CompileOptions options;
  options.cache_dir = cache_dir;
  options.libs = eager_libs();
  for (const std::string& feature : disabled_cpu_features()) options.flags.push_back("-mno-" + feature);
  for (const std::string& flag : emulated_cpu_feature_flags()) options.flags.push_back(flag);
  if (cpu_features(target).bf16_dot_peak_gflops <= 0) options.flags.push_back("-DPRISM_NO_BF16_DOT");
  return options;
}

void CpuBackend::compile(std::vector<Build>& builds, const TargetDescription& target, const CompileSettings& settings) const {
  compile_builds(builds, kernel_compile_options(target, settings.cache_dir), settings.parallel);
}

RunOutcome CpuBackend::run(KernelRunner& runner, const Build& build, const RunSettings& settings, const CancelToken* cancel) const {
  LibraryRun request;
  request.library = build.runnable;
  request.output_shapes = settings.output_shapes;
  request.threads = settings.threads;
  request.input_dtypes = settings.input_dtypes;
  request.output_dtypes = settings.output_dtypes;
  if (settings.timeout_s > 0) request.timeout_s = settings.timeout_s;
  if (settings.round) {
    request.outputs = false;
    request.warmup = 1;
    request.min_runs = 3;
    request.max_runs = 1000000;  // a fast kernel's round is thousands of calls: its median shrugs off a preemption
    request.min_time_s = settings.round_s;
  } else {  // the check: one call whose outputs come back, timed once
    request.warmup = 0;
    request.min_runs = request.max_runs = 1;
    request.min_time_s = 0;
  }
  return run_library(runner, request, cancel);
}

std::string CpuBackend::serve(WorkerCall& call) const { return serve_library(call); }

// 16-bit results: the reference rounds every intermediate to the storage dtype, a fused kernel
// keeps its intermediates in f32; the bound covers the difference (the GPU's, cuda_backend.cpp).
const CostRules& CpuBackend::cost_rules() const {
  static const CpuCostRules rules;
  return rules;
}

namespace {

// CpuFeatures' numbers, each named as its field.
std::vector<std::pair<std::string, double CpuFeatures::*>> feature_fields() {
  return {{"bf16_dot_gflops", &CpuFeatures::bf16_dot_gflops},
          {"bf16_dot_peak_gflops", &CpuFeatures::bf16_dot_peak_gflops},
          {"bf16_amx_gflops", &CpuFeatures::bf16_amx_gflops},
          {"widen_f16_gflops", &CpuFeatures::widen_f16_gflops},
          {"widen_bf16_gflops", &CpuFeatures::widen_bf16_gflops}};
}

}  // namespace

std::string CpuBackend::features_text(const TargetDescription& target) const {
  const CpuFeatures& f = cpu_features(target);
  std::vector<std::pair<std::string, std::string>> words{{"simd_bytes", std::to_string(f.simd_bytes)}};
  for (const auto& [key, field] : feature_fields()) words.emplace_back(key, number_text(f.*field));
  return feature_words(words);
}

void CpuBackend::read_features(std::string_view text, TargetDescription& target) const {
  CpuFeatures& f = cpu_features(target);
  for (const auto& [key, value] : parse_feature_words(text)) {
    bool known = key == "simd_bytes";
    if (known) f.simd_bytes = int(parse_number(value, key));
    for (const auto& [name, field] : feature_fields())
      if (name == key) f.*field = parse_number(value, key), known = true;
    if (!known) throw Error(Error::Kind::InvalidArgument, "the cpu target has no feature '" + key + "'");
  }
}

Tolerance CpuBackend::tolerance(DType dtype) const {
  switch (dtype) {
    case DType::F16: return {1e-2, 1e-2};
    case DType::BF16: return {5e-2, 5e-2};
    case DType::F32: break;
  }
  return {1e-3, 1e-4};
}

namespace {
// abi.h's symbols as an export names them: the entry is `symbol`, the others `symbol` and a suffix.
std::vector<std::pair<std::string, std::string>> export_names(const std::string& symbol) {
  return {{kEntrySymbol, symbol},
          {kEntryKernelsSymbol, symbol + "_kernels"},
          {kKernelCountSymbol, symbol + "_kernel_count"},
          {kErrorSymbol, symbol + "_error"}};
}
}  // namespace

std::string CpuBackend::export_source(const Build& generated, const std::string& symbol) const {
  std::string s = "// The C ABI of engine/backend/cpu/abi.h under this export's names.\n";
  for (const auto& [name, exported] : export_names(symbol)) s += "#define " + name + " " + exported + "\n";
  return s + generated.source;
}

std::string CpuBackend::header_declarations(const std::string& guard, const std::string& symbol) const {
  return "// Every tensor is dense row-major at its declared dtype: f32 as float, f16 and bf16 as their 16\n"
         "// bits (uint16_t; bf16 is the top half of an f32). Compile the source with -O3 -march=native\n"
         "// -mprefer-vector-width=512 -fopenmp (and -lopenblas if it calls cblas). " +
         symbol + " returns 0, or nonzero\n// with " + symbol + "_error() saying why.\n#ifndef " + guard + "\n#define " + guard +
         "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
         "int " + symbol + "(const void* const* inputs, void* const* outputs, int threads);\n"
         "const char* " + symbol + "_error(void);\n"
         "int " + symbol + "_kernel_count(void);\n"
         "int " + symbol + "_kernels(const void* const* inputs, void* const* outputs, int threads, int first, int last);\n"
         "#ifdef __cplusplus\n}\n#endif\n#endif\n";
}

// What compile() makes is a shared object implementing abi.h.
std::string CpuBackend::library(const Build& generated, const TargetDescription& target, const CompileSettings& settings) const {
  return compiled_library(generated, kernel_compile_options(target, settings.cache_dir));
}

}  // namespace prism::backend::cpu
