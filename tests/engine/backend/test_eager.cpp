// The eager baseline: every example program, compiled from its generated source and run through the
// kernel ABI, matches the reference interpreter.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>

#include "../sgraph/sgraph_helpers.h"
#include "support/entry_call.h"
#include "wide_activations.h"
#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cpu/eager.h"
#include "engine/compile_helpers.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/lower_composites.h"
#include "support/subprocess.h"

using namespace prism;
using namespace prism::backend::cpu;

namespace {

// Runs the compiled eager library and the interpreter on the same random f32 inputs; returns the
// largest |eager - reference| / (|reference| + 1) over all outputs.
double eager_error(const std::string& so, const Program& p, const DimBindings& b, int threads) {
  std::map<std::string, Tensor> inputs;
  std::vector<const void*> in_ptrs;
  for (int id : p.inputs) {
    const Value& v = p.value(id);
    inputs[v.name] = random_tensor(DType::F32, concrete_shape(v.type.shape, b), 7, v.name);
  }
  for (int id : p.inputs) in_ptrs.push_back(inputs.at(p.value(id).name).data.data());
  std::vector<Tensor> want = interpret(p, b, inputs);
  std::vector<std::vector<float>> got;
  std::vector<void*> out_ptrs;
  for (const Tensor& t : want) got.emplace_back(t.data.size(), NAN);
  for (auto& g : got) out_ptrs.push_back(g.data());
  LoadedLibrary lib(so);
  int rc = lib.function<EntryFn>(kEntrySymbol)(in_ptrs.data(), out_ptrs.data(), threads);
  INFO(lib.function<ErrorFn>(kErrorSymbol)());
  REQUIRE(rc == 0);
  double worst = 0;
  for (size_t o = 0; o < want.size(); ++o)
    for (size_t i = 0; i < want[o].data.size(); ++i) {
      double r = want[o].data[i], e = got[o][i];
      // NaN agrees with NaN only (log of a negative input, say).
      double err = std::isnan(e) || std::isnan(r) ? (std::isnan(e) == std::isnan(r) ? 0 : INFINITY) : std::fabs(e - r) / (std::fabs(r) + 1);
      worst = std::max(worst, err);
    }
  return worst;
}

// The eager baseline of `p` at `b`, compiled, against the interpreter on 2 threads.
double compiled_eager_error(const Program& p, const DimBindings& b) {
  test::TempDir dir;
  CompileOptions options;
  options.cache_dir = dir.path();
  options.libs = eager_libs();
  std::string src = generate_eager_source(p, b);
  INFO(src);
  return eager_error(compile_library(src, options).path, p, b, 2);
}

// The example with every f16 replaced by f32: the eager baseline stores everything as f32.
Program example_f32(const std::string& name) {
  return lower_composites(test::only_program(std::regex_replace(test::read_example(name), std::regex("f16"), "f32")));
}

}  // namespace

TEST_CASE("eager: every example program compiles and matches the interpreter", "[tune][eager]") {
  test::TempDir dir;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(test::source("examples")))
    if (entry.path().extension() == ".prism") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  REQUIRE(names.size() >= 7);

  std::vector<Program> programs;
  std::vector<DimBindings> bindings;
  std::vector<std::string> sources;
  for (const std::string& name : names) {
    programs.push_back(example_f32(name));
    DimBindings b;  // small, and different per dim so that a swapped index shows
    int64_t next = 3;
    for (const std::string& d : programs.back().dims) b[d] = next++;
    bindings.push_back(b);
    sources.push_back(generate_eager_source(programs.back(), b));
  }
  CompileOptions options;
  options.cache_dir = dir.path();
  options.libs = eager_libs();
  std::vector<std::string> errors;
  std::vector<CompiledLibrary> libs = compile_libraries(sources, options, 2, &errors);
  for (size_t i = 0; i < names.size(); ++i) {
    INFO(names[i] << "\n" << errors[i] << "\n" << sources[i]);
    REQUIRE(errors[i].empty());
    CHECK(eager_error(libs[i].path, programs[i], bindings[i], 2) <= 1e-4);
    CHECK(eager_error(libs[i].path, programs[i], bindings[i], 1) <= 1e-4);  // and again: buffers reused
  }
}

TEST_CASE("eager: every elementwise op of the table computes the interpreter's formula", "[tune][eager][ops]") {
  CHECK(compiled_eager_error(lower_composites(test::only_program(test::every_elementwise_op_program())), {{"n", 3}, {"d", 20}}) <= 1e-6);
}

TEST_CASE("eager: broadcasting, reductions over any axis, data movement and constants", "[tune][eager]") {
  const char* text = R"(program p(X: f32[a, b, c], Y: f32[b, 1], W: f32[c, b]) {
  M = max(X, axis=1, keepdims=false)
  R = rms(X, axis=0)
  T = transpose(X, perm=[2, 0, 1])
  Z = relu(X - Y) * 2 + mean(X, axis=-1)
  P = matmul(X, W)
  G = gelu(neg(sqrt(square(X)))) + rsqrt(exp(X)) + log(exp(X))
  C = concat(X, -X, axis=-1)
  W1, W2 = split(W, 2, axis=0)
  return M, R, T, Z, P, G, silu(M), reshape(X, [a, b*c]), C, W2, W1, X
}
)";
  // c even: W splits in two
  CHECK(compiled_eager_error(lower_composites(test::only_program(text)), {{"a", 2}, {"b", 3}, {"c", 4}}) <= 1e-4);
}

// README, "The language": a 16-bit composite's statistics in f32 (a cast step each way), each
// tensor at its declared dtype.
TEST_CASE("eager: f16 norms on wide activations keep their statistics in f32", "[tune][eager][casts]") {
  test::TempDir dir;
  CompileOptions options;
  options.cache_dir = dir.path();
  options.libs = eager_libs();
  for (const test::WideLayer& layer : test::wide_layers()) {
    INFO("layer " << layer.name);
    const Program p = test::lowered_text(layer.text, layer.name);
    const auto named = test::wide_inputs(p);
    const Tensor want = interpret(p, test::wide_dims(), named).at(0);
    std::vector<const Tensor*> ins;
    std::vector<DType> in_dtypes;
    for (int id : p.inputs) {
      ins.push_back(&named.at(p.value(id).name));
      in_dtypes.push_back(p.value(id).type.dtype);
    }
    std::vector<Tensor> outs{Tensor::zeros(DType::F32, want.shape)};
    LoadedLibrary lib(compile_library(generate_eager_source(p, test::wide_dims()), options).path);
    REQUIRE(test::call_entry(lib, ins, in_dtypes, outs, {p.value(p.outputs[0]).type.dtype}, 2) == 0);
    CHECK(test::relative_error(outs[0], want) < 4e-3);
  }
}

