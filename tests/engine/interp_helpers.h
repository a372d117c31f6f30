// Helpers for interpreter tests: compile, lower and run a program on explicit tensors.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "compile_helpers.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/lower_composites.h"

namespace prism::test {

inline Tensor tensor(DType dtype, std::vector<int64_t> shape, std::vector<float> data) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}

inline Tensor f32(std::vector<int64_t> shape, std::vector<float> data) { return tensor(DType::F32, std::move(shape), std::move(data)); }

inline std::vector<Tensor> run_text(const std::string& text, const DimBindings& bindings, const std::map<std::string, Tensor>& inputs,
                                    const CancelToken* cancel = nullptr) {
  return interpret(lower_composites(only_program(text)), bindings, inputs, cancel);
}

// Runs a one-output program whose single input is X.
inline Tensor run1(const std::string& params, const std::string& expr, const DimBindings& bindings, const Tensor& x) {
  return run_text("program p(" + params + ") {\n  return " + expr + "\n}\n", bindings, {{"X", x}}).at(0);
}

}  // namespace prism::test
