#include "engine/backend/cuda/export.h"

#include <map>

#include "engine/backend/cuda/cublas.h"
#include "engine/backend/cuda/kernel_sources.h"
#include "engine/error.h"

namespace prism::backend::cuda {

namespace {

// The device tensors by name: inputs, outputs, then scratch, as the launcher's T[] holds them.
std::map<std::string, size_t> tensor_slots(const CudaPlan& plan) {
  std::map<std::string, size_t> slots;
  for (const auto* list : {&plan.inputs, &plan.outputs, &plan.scratch})
    for (const CudaTensor& t : *list) slots.emplace(t.name, slots.size());
  return slots;
}

std::string slot(const std::map<std::string, size_t>& slots, const std::string& name) {
  auto it = slots.find(name);
  if (it == slots.end()) throw Error(Error::Kind::Failed, "the CUDA plan names no tensor '" + name + "'");
  return "T[" + std::to_string(it->second) + "]";
}

// A tensor's address at an element offset, for cuBLAS.
std::string at(const std::map<std::string, size_t>& slots, const std::string& name, int64_t offset, DType dtype) {
  if (offset == 0) return slot(slots, name);
  return "static_cast<char*>(" + slot(slots, name) + ") + " + std::to_string(offset * dtype_bytes(dtype));
}

DType dtype_of(const CudaPlan& plan, const std::string& name) {
  for (const auto* list : {&plan.inputs, &plan.outputs, &plan.scratch})
    for (const CudaTensor& t : *list)
      if (t.name == name) return t.dtype;
  throw Error(Error::Kind::Failed, "the CUDA plan names no tensor '" + name + "'");
}

std::string kernel_call(const CudaKernelInfo& k, const std::map<std::string, size_t>& slots) {
  std::string params;
  for (const std::string& p : k.params) params += slot(slots, p) + ", ";
  return "    void* p[] = {" + params + "nullptr};\n    failed = prism_export_launch(" + k.name + ", " + std::to_string(k.grid_blocks) +
         "L, " + std::to_string(k.threads) + ", " + std::to_string(k.shared_bytes) + ", stream, p);\n";
}

std::string gemm_call(const CudaGemm& g, const CudaPlan& plan, const std::map<std::string, size_t>& slots) {
  const ColumnMajorGemm cm = column_major(g);
  const DType ab = dtype_of(plan, g.a), c = dtype_of(plan, g.c);
  auto n = [](int64_t v) { return std::to_string(v); };
  return "    failed = prism_export_gemm(stream, " + std::string(cm.transpose_first ? "true" : "false") + ", " +
         (cm.transpose_second ? "true" : "false") + ", " + n(cm.m) + ", " + n(cm.n) + ", " + n(cm.k) + ",\n        " +
         at(slots, g.b, g.offset_b, ab) + ", " + n(cuda_data_type(ab)) + ", " + n(cm.ld_first) + ", " + n(g.stride_b) + ",\n        " +
         at(slots, g.a, g.offset_a, ab) + ", " + n(cuda_data_type(ab)) + ", " + n(cm.ld_second) + ", " + n(g.stride_a) + ",\n        " +
         at(slots, g.c, g.offset_c, c) + ", " + n(cuda_data_type(c)) + ", " + n(cm.ld_c) + ", " + n(g.stride_c) + ", " + n(g.batch) + ");\n";
}

std::string launcher(const CudaPlan& plan, const std::string& symbol) {
  const std::map<std::string, size_t> slots = tensor_slots(plan);
  const size_t inputs = plan.inputs.size(), outputs = plan.outputs.size();
  std::string s = "\n// " + symbol + ": the plan on the caller's stream (engine/backend/cuda/export.cpp).\n" + embedded::export_runtime_cuh;
  s += "static const char* " + symbol + "_message = \"\";\n";
  s += "extern \"C\" const char* " + symbol + "_error(void) { return " + symbol + "_message; }\n";
  s += "extern \"C\" int " + symbol + "(const void* const* inputs, void* const* outputs, void* stream) {\n";
  s += "  void* T[" + std::to_string(slots.size()) + "] = {};\n";
  for (size_t i = 0; i < inputs; ++i) s += "  T[" + std::to_string(i) + "] = const_cast<void*>(inputs[" + std::to_string(i) + "]);\n";
  for (size_t o = 0; o < outputs; ++o) s += "  T[" + std::to_string(inputs + o) + "] = outputs[" + std::to_string(o) + "];\n";
  s += "  const char* failed = nullptr;\n";
  for (size_t i = 0; i < plan.scratch.size(); ++i) {
    const CudaTensor& t = plan.scratch[i];
    const std::string bytes = std::to_string(t.elements * dtype_bytes(t.dtype));
    s += "  if (!failed && !(T[" + std::to_string(inputs + outputs + i) + "] = prism_export_alloc(" + bytes +
         ", stream))) failed = \"out of device memory for the scratch tensor " + t.name + " (" + bytes + " bytes)\";\n";
    if (t.zeroed) s += "  if (!failed) failed = prism_export_zero(T[" + std::to_string(inputs + outputs + i) + "], " + bytes + ", stream);\n";
  }
  for (const CudaStep& step : plan.steps)
    s += "  if (!failed) {\n" + (step.is_gemm ? gemm_call(step.gemm, plan, slots) : kernel_call(step.kernel, slots)) + "  }\n";
  for (size_t i = 0; i < plan.scratch.size(); ++i)
    s += "  if (T[" + std::to_string(inputs + outputs + i) + "]) prism_export_free(T[" + std::to_string(inputs + outputs + i) + "], stream);\n";
  s += "  " + symbol + "_message = failed ? failed : \"\";\n  return failed ? 1 : 0;\n}\n";
  return s;
}

}  // namespace

std::string export_source(const std::string& source, const CudaPlan& plan, const std::string& symbol) {
  // The kernels are extern "C": named after the export, so that several exports link together.
  std::string s = "// This export's kernels under its own names.\n";
  for (const CudaStep& step : plan.steps)
    if (!step.is_gemm) s += "#define " + step.kernel.name + " " + symbol + "_" + step.kernel.name + "\n";
  return s + source + launcher(plan, symbol);
}

std::string export_declarations(const std::string& guard, const std::string& symbol) {
  return "// Every tensor is a device pointer, dense row-major at its declared dtype (f32 as float, f16 as\n"
         "// __half, bf16 as __nv_bfloat16). Compile the source with nvcc -O3 -arch=sm_XX (and link\n"
         "// -lcublas). " + symbol + " runs the kernels on `stream` (a cudaStream_t; NULL: the default\n"
         "// stream) without waiting for them; it returns 0, or nonzero with " + symbol + "_error() saying why.\n#ifndef " + guard +
         "\n#define " + guard + "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n" +
         "int " + symbol + "(const void* const* inputs, void* const* outputs, void* stream);\n" +
         "const char* " + symbol + "_error(void);\n#ifdef __cplusplus\n}\n#endif\n#endif\n";
}

}  // namespace prism::backend::cuda
