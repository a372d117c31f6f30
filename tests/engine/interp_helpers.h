// Helpers for interpreter tests: compile, lower and run a program on explicit tensors.
#pragma once
#include <algorithm>
#include <cmath>
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

// Two programs over the same inputs, run on the same seeded random tensors: the largest
// |a - b| / (1e-5 * |b| + 1e-6) over every output element (<= 1: equal up to f32 reordering);
// infinity when the outputs' count or shapes differ.
inline double programs_apart(const Program& a, const Program& b, const DimBindings& dims, uint64_t seed) {
  std::map<std::string, Tensor> in;
  for (int id : a.inputs) {
    const Value& v = a.value(id);
    in[v.name] = random_tensor(DType::F32, concrete_shape(v.type.shape, dims), seed, v.name);
  }
  std::vector<Tensor> x = interpret(a, dims, in), y = interpret(b, dims, in);
  if (x.size() != y.size()) return INFINITY;
  double worst = 0;
  for (size_t o = 0; o < x.size(); ++o) {
    if (x[o].shape != y[o].shape) return INFINITY;
    for (size_t i = 0; i < x[o].data.size(); ++i)
      worst = std::max(worst, std::fabs(double(x[o].data[i]) - y[o].data[i]) / (1e-5 * std::fabs(double(y[o].data[i])) + 1e-6));
  }
  return worst;
}

// Runs a one-output program whose single input is X.
inline Tensor run1(const std::string& params, const std::string& expr, const DimBindings& bindings, const Tensor& x) {
  return run_text("program p(" + params + ") {\n  return " + expr + "\n}\n", bindings, {{"X", x}}).at(0);
}

}  // namespace prism::test
