#include "engine/backend/cpu/library_run.h"

#include <stdlib.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>

#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cpu/describe.h"

namespace prism::backend::cpu {

namespace {

// The arguments' STORAGE: "-" when every tensor is f32, else "IN/OUT", the inputs' and outputs'
// dtype lists ("bf16,f32/bf16"; a list shorter than the tensors is padded with f32).
std::string storage_text(std::vector<DType> in, std::vector<DType> out, size_t inputs, size_t outputs) {
  auto all_f32 = [](const std::vector<DType>& v) { return std::all_of(v.begin(), v.end(), [](DType t) { return t == DType::F32; }); };
  if (all_f32(in) && all_f32(out)) return "-";
  in.resize(inputs, DType::F32);
  out.resize(outputs, DType::F32);
  return dtype_list_text(in) + "/" + dtype_list_text(out);
}

// OpenBLAS picks its kernels when the first library that links it loads (describe.h says why).
void set_openblas_core_type() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!::getenv("OPENBLAS_CORETYPE"))
      if (const char* core = openblas_core_type()) ::setenv("OPENBLAS_CORETYPE", core, 1);
  });
}

}  // namespace

RunOutcome run_library(KernelRunner& runner, const LibraryRun& run, const CancelToken* cancel) {
  WorkerRun w;
  w.backend = "cpu";
  std::ostringstream args;  // THREADS WARMUP MIN MAX MIN_S STORAGE \t LIBRARY
  args << run.threads << " " << run.warmup << " " << run.min_runs << " " << run.max_runs << " " << run.min_time_s << " "
       << storage_text(run.input_dtypes, run.output_dtypes, runner.input_count(), run.output_shapes.size()) << "\t" << run.library;
  w.arguments = args.str();
  w.output_shapes = run.output_shapes;
  w.outputs = run.outputs;
  w.timeout_s = run.timeout_s;
  return runner.run(w, cancel);
}

std::string serve_library(WorkerCall& call) {
  int threads = 1, warmup = 0, min_runs = 1, max_runs = 1;
  double min_time_s = 0;
  std::string storage, library;
  std::istringstream args(call.arguments);
  args >> threads >> warmup >> min_runs >> max_runs >> min_time_s >> storage;
  if (!args) return "error malformed cpu run '" + call.arguments + "'";
  args >> std::ws;
  std::getline(args, library);
  if (library.empty()) return "error the cpu run names no library";
  const size_t k = call.output_elements.size();
  std::vector<DType> in_types(call.inputs.size(), DType::F32), out_types(k, DType::F32);
  if (storage != "-") {
    const size_t slash = storage.find('/');
    if (slash == std::string::npos) return "error malformed storage '" + storage + "'";
    in_types = parse_dtype_list(storage.substr(0, slash));
    out_types = parse_dtype_list(storage.substr(slash + 1));
    if (in_types.size() != call.inputs.size() || out_types.size() != k) return "error the storage does not name every tensor";
  }
  set_openblas_core_type();
  LoadedLibrary lib(library);
  auto entry = lib.function<EntryFn>(kEntrySymbol);
  ErrorFn error = nullptr;
  try {
    error = lib.function<ErrorFn>(kErrorSymbol);
  } catch (const std::exception&) {
  }
  std::vector<const void*> ins;
  for (size_t i = 0; i < call.inputs.size(); ++i) ins.push_back(call.inputs.at(i, in_types[i]));
  const HostOutputs outs(call.output_elements, out_types);
  auto call_once = [&]() -> std::string {
    const int rc = entry(ins.data(), outs.pointers(), threads);
    if (rc == 0) return "";
    const std::string why = error ? error() : "";
    return "error the kernel returned " + std::to_string(rc) + (why.empty() ? "" : ": " + why);
  };
  return run_host_kernel(call, outs, call_once, {warmup, min_runs, max_runs, min_time_s});
}

}  // namespace prism::backend::cpu
