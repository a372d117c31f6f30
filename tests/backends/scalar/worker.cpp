// The scalar backend's worker half: in prism-runner-scalar, it loads a library (checked as the
// CPU's are: cpu/compiler.h's LoadedLibrary), calls prism_entry once for the outputs, then warms
// up and times `runs` calls.
#include "tests/backends/scalar/worker.h"

#include <sstream>

#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/backend/runner/worker_call.h"
#include "tests/backends/scalar/scalar_backend.h"

namespace prism::test::scalar {

namespace {

std::string list_word(const std::vector<DType>& dtypes) { return dtypes.empty() ? "-" : backend::dtype_list_text(dtypes); }
std::vector<DType> parse_list_word(const std::string& word) { return word == "-" ? std::vector<DType>{} : backend::parse_dtype_list(word); }

}  // namespace

std::string worker_arguments(int warmup, int runs, const std::vector<DType>& inputs, const std::vector<DType>& outputs,
                             const std::string& library) {
  return std::to_string(warmup) + " " + std::to_string(runs) + " " + list_word(inputs) + " " + list_word(outputs) + "\t" + library;
}

std::string ScalarBackend::serve(backend::WorkerCall& call) const {
  int warmup = 0, runs = 1;
  std::string inputs_word, outputs_word, library;
  std::istringstream args(call.arguments);
  if (!(args >> warmup >> runs >> inputs_word >> outputs_word)) return "error malformed scalar run '" + call.arguments + "'";
  args >> std::ws;
  std::getline(args, library);
  std::vector<DType> in_types = parse_list_word(inputs_word), out_types = parse_list_word(outputs_word);
  in_types.resize(call.inputs.size(), DType::F32);
  const backend::cpu::LoadedLibrary lib(library);
  const auto entry = lib.function<backend::cpu::EntryFn>(backend::cpu::kEntrySymbol);
  const auto error = lib.function<backend::cpu::ErrorFn>(backend::cpu::kErrorSymbol);
  std::vector<const void*> ins;
  for (size_t i = 0; i < call.inputs.size(); ++i) ins.push_back(call.inputs.at(i, in_types[i]));
  const backend::HostOutputs outs(call.output_elements, out_types);
  auto once = [&]() -> std::string {
    return entry(ins.data(), outs.pointers(), 1) == 0 ? "" : std::string("error the kernel failed: ") + error();
  };
  return backend::run_host_kernel(call, outs, once, {warmup, runs, runs, 0});
}

}  // namespace prism::test::scalar
