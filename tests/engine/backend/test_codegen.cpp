// The CPU code generator against the sGraph evaluator: every hand-written family at two sizes
// (including a non-multiple of the vector blocking, a cross-block reduction combined by a later
// kernel, max/rms accumulators, batched matmul and library kernels), compiled, run with 1 and 2
// threads; and every family the search finds for the examples, compiled and checked.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

#include "../search/search_helpers.h"
#include "masked_inputs.h"
#include "wide_activations.h"
#include "../sgraph/families.h"
#include "../sgraph/sgraph_helpers.h"
#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/amx_kernel.h"
#include "engine/backend/cpu/codegen.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/backend/cpu/describe.h"
#include "engine/backend/cpu/emit_ops.h"
#include "engine/backend/cpu/fuse_squares.h"
#include "engine/backend/cpu/parallel_grain.h"
#include "engine/backend/lower.h"
#include "engine/error.h"
#include "engine/interp/half.h"
#include "engine/sgraph/print.h"
#include "support/entry_call.h"
#include "support/subprocess.h"

using namespace prism;
using namespace prism::backend::cpu;
namespace fam = prism::test::families;

namespace {

// One compile cache for the whole test run.
const std::string& cache_dir() {
  static test::TempDir dir;
  return dir.path();
}

int native_simd_bytes() { return __builtin_cpu_supports("avx512f") ? 64 : 32; }

// Every loop parallel whatever its work, so that the threaded code runs at these small sizes too
// (a kernel below its grain is the same code on one thread: parallel_grain.h).
CodegenOptions every_loop_parallel(int simd_bytes = native_simd_bytes()) {
  CodegenOptions options;
  options.simd_bytes = simd_bytes;
  options.grain = false;
  return options;
}

CompileOptions compile_options() {
  CompileOptions o;
  o.cache_dir = cache_dir();
  o.libs = {"-lopenblas"};
  return o;
}

// The family with every storage type f32, as the generated code computes.
std::string as_f32(std::string s) {
  for (const char* t : {"bf16", "f16"})
    for (size_t at; (at = s.find(t)) != std::string::npos;) s.replace(at, std::string(t).size(), "f32");
  return s;
}

// Tensors at their declared dtypes (outputs come back widened to f32).
std::vector<Tensor> run_library(const LoadedLibrary& lib, const sgraph::Instance& inst, const std::map<std::string, Tensor>& inputs, int threads) {
  std::vector<const Tensor*> ins;
  std::vector<DType> in_dtypes, out_dtypes;
  for (const auto& in : inst.graph.inputs) {
    ins.push_back(&inputs.at(in.name));
    in_dtypes.push_back(in.type.dtype);
  }
  std::vector<Tensor> outs;
  for (const std::string& o : inst.graph.outputs) {
    const Type& type = inst.analysis.tensors.at(o);
    outs.push_back(Tensor::zeros(DType::F32, concrete_shape(type.shape, inst.bindings)));
    out_dtypes.push_back(type.dtype);
  }
  int rc = test::call_entry(lib, ins, in_dtypes, outs, out_dtypes, threads);
  INFO(lib.function<ErrorFn>(kErrorSymbol)());
  REQUIRE(rc == 0);
  return outs;
}

// Largest relative error of the generated code over all outputs, with 1 and 2 threads, against
// the evaluator on the same random inputs.
double codegen_error(const sgraph::Instance& inst, const CompiledLibrary& compiled, uint64_t seed = 11) {
  auto inputs = test::random_inputs(inst.graph, inst.bindings, seed);
  std::vector<Tensor> want = sgraph::evaluate(inst, inputs);
  LoadedLibrary lib(compiled.path);
  double worst = 0;
  for (int threads : {1, 2})
    for (int rep = 0; rep < 2; ++rep) {  // twice: static buffers reused
      std::vector<Tensor> got = run_library(lib, inst, inputs, threads);
      for (size_t o = 0; o < want.size(); ++o) worst = std::max(worst, test::relative_error(got[o], want[o]));
    }
  return worst;
}

// `keep_dtypes`: the family's declared dtypes, else all f32.
// `flags`: more compiler flags.
// `amx`: CodegenOptions::amx.
double family_codegen_error(const std::string& family, const DimBindings& dims, const DimBindings& sizes, int simd_bytes = native_simd_bytes(),
                            bool keep_dtypes = false, const std::vector<std::string>& flags = {}, bool amx = false) {
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(keep_dtypes ? family : as_f32(family)), dims, sizes, sgraph::TileBudget{1 << 20});
  CodegenOptions options = every_loop_parallel(simd_bytes);
  options.amx = amx;
  std::string source = generate_cpu_source(inst, options);
  if (const char* dump = std::getenv("PRISM_CODEGEN_DUMP")) std::ofstream(dump) << source;  // for debugging by hand
  CompileOptions compile = compile_options();
  compile.flags.insert(compile.flags.end(), flags.begin(), flags.end());
  return codegen_error(inst, compile_library(source, compile));
}

constexpr double kTol = 1e-4;

// X @ W as one library kernel at `dtype` (`batched`: X has a leading batch dim b, W is broadcast).
std::string library_matmul(const std::string& dtype, bool batched = false) {
  return "input X: " + dtype + (batched ? "[b, n, d]" : "[n, d]") + "\ninput W: " + dtype + "[d, m]\nkernel 0: P: " + dtype +
         " = matmul(X, W)\noutput P\n";
}

// The library matmul at `dtype` on AMX tiles (where the CPU grants them) within `tol` at each shape.
void check_amx_library_matmuls(const std::string& dtype, const std::vector<DimBindings>& shapes, double tol) {
  for (const DimBindings& dims : shapes) {
    INFO(dtype << " n=" << dims.at("n") << " d=" << dims.at("d") << " m=" << dims.at("m"));
    CHECK(family_codegen_error(library_matmul(dtype), dims, {}, 64, true, {}, true) < tol);
  }
}

// Max and rms accumulators, a per-tile reduction folded by a sum accumulator, a broadcast binary.
const char* kMaxRmsFamily = R"(input X: f32[n, d]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: 0->g1, loop: 1}
  e = exp(x)
  m = max_accumulate(e)
  r = rms_accumulate(x, axis=1)
  s = sum(x, axis=1)
  sa = sum_accumulate(s)
  y = mul(m, r)
  z = add(y, sa)
  save O: f32 = z map {grid: 0->g1, loop: -}
output O
)";

// A value saved inside the loop, walked along its columns.
const char* kWalkedSaveFamily = R"(input X: f32[n, d]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: 0->g1, loop: 1}
  y = gelu(x)
  save O: f32 = y map {grid: 0->g1, loop: 1}
output O
)";

// Library kernels only: a batched matmul broadcasting its right operand, unary ops, reductions
// with and without kept dims, broadcast binary ops, and a graph output returned twice.
const char* kLibraryFamily = R"(input A: f32[b, m, k]
input B: f32[k, n]
kernel 0: P: f32 = matmul(A, B)
kernel 1: Q: f32 = silu(P)
kernel 2: R: f32 = rms(Q, axis=2, keepdims=false)
kernel 3: S: f32 = max(Q, axis=0)
kernel 4: E: f32 = exp(S)
kernel 5: U: f32 = div(Q, E)
kernel 6: V: f32 = sum(U, axis=-1)
kernel 7: W: f32 = sub(U, V)
kernel 8: Z: f32 = relu(W)
output R, Z, R
)";

// Library matmuls through OpenBLAS: nn.Linear's W[m, d] read as W^T in place, a transposed left
// operand, a batched product broadcasting a transposed weight, and an epilogue kernel after one.
const char* kVendorFamily = R"(input X: f32[n, d]
input W: f32[m, d]
input Y: f32[d, n]
input B: f32[b, n, d]
input c: f32[m]
kernel 0: P: f32 = matmul(X, W view [1, 0])
kernel 1: Q: f32 = matmul(Y view [1, 0], W view [1, 0])
kernel 2: R: f32 = matmul(B, W view [1, 0])
kernel 3: custom grid=[g1]
  p = load P map {grid: 0->g1, loop: -}
  q = load Q map {grid: 0->g1, loop: -}
  v = load c view [-, 0] map {grid: -, loop: -}
  s = add(p, q)
  t = add(s, v)
  save O: f32 = t map {grid: 0->g1, loop: -}
output O, R
)";

}  // namespace

// fam::kLlama's W^T is a matmul's B only: read in place by the NT kernel when the rows are few for
// the contraction (8 * n <= d / F1), else copied into a tile.
TEST_CASE("codegen: views and constants; a transposed B read in place (NT kernel) or copied, both right", "[codegen][views]") {
  for (int simd : {32, 64}) {
    INFO("simd " << simd);
    // In place: 8 * 3 <= 160 / 2; odd sizes exercise every tail (rows, columns, K % lanes).
    CHECK(family_codegen_error(fam::kLlama, {{"n", 3}, {"d", 160}, {"m", 22}}, {{"g1", 2}, {"F1", 2}}, simd) < kTol);
    CHECK(family_codegen_error(fam::kLlama, {{"n", 5}, {"d", 200}, {"m", 18}}, {{"g1", 1}, {"F1", 1}}, simd) < kTol);
    // Copied: 8 * 16 > 64 / 4.
    CHECK(family_codegen_error(fam::kLlama, {{"n", 16}, {"d", 64}, {"m", 16}}, {{"g1", 2}, {"F1", 4}}, simd) < kTol);
  }
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(fam::kLlama), {{"n", 3}, {"d", 160}, {"m", 22}}, {{"g1", 2}, {"F1", 2}},
                                              sgraph::TileBudget{1 << 20});
  CHECK_THAT(generate_cpu_source(inst, {}), Catch::Contains("prism_mm_nt<3, 11, 80,"));
  inst = sgraph::instantiate(sgraph::parse(fam::kLlama), {{"n", 16}, {"d", 64}, {"m", 16}}, {{"g1", 2}, {"F1", 4}}, sgraph::TileBudget{1 << 20});
  CHECK_THAT(generate_cpu_source(inst, {}), !Catch::Contains("prism_mm_nt<16"));
}

// Many rows over a W^T read in place: the packed NT form (nt_packing) transposes panels of B^T and
// runs the outer-product kernel; ragged rows, panels, columns and K, f32 and 16-bit operands.
TEST_CASE("codegen: many rows over a transposed B take the packed NT form and match", "[codegen][views]") {
  for (int simd : {32, 64}) {
    INFO("simd " << simd);
    const int64_t mr = detail::nt_packing(20, 37, 203, simd).mr;
    CHECK(mr > 0);
    CHECK(detail::nt_packing(mr, 37, 203, simd).mr == 0);  // one row block a panel: read in place
    // 20 rows, K = 203 (8 * 20 <= 406 / 2: read in place), 37 columns a block (panels, a tail).
    CHECK(family_codegen_error(fam::kLlama, {{"n", 20}, {"d", 406}, {"m", 74}}, {{"g1", 2}, {"F1", 2}}, simd) < kTol);
    std::string bf16 = fam::kLlama;
    for (size_t at = 0; (at = bf16.find(": f32", at)) != std::string::npos; at += 6) bf16.replace(at, 5, ": bf16");
    CHECK(family_codegen_error(bf16, {{"n", 20}, {"d", 406}, {"m", 74}}, {{"g1", 2}, {"F1", 2}}, simd, true) < 1e-2);
  }
  const detail::Blocking big = detail::nt_packing(64, 4096, 4096, 32);
  CHECK(big.kc * big.nv * 32 <= 128 * 1024);  // a panel's K chunk stays within 128 KiB
  CHECK(big.kc % 8 == 0);
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(fam::kLlama), {{"n", 20}, {"d", 406}, {"m", 74}}, {{"g1", 2}, {"F1", 2}},
                                              sgraph::TileBudget{1 << 20});
  const detail::Blocking packed = detail::nt_packing(20, 37, 203, CodegenOptions{}.simd_bytes);  // the options below
  CHECK_THAT(generate_cpu_source(inst, {}), Catch::Contains("prism_mm_nt<20, 37, 203,") &&
                                                Catch::Contains(", " + std::to_string(packed.mr) + ", " + std::to_string(packed.nv) + ", 203>("));
}

TEST_CASE("codegen: split and concat on tiles, on loads read in place and into a save, match the evaluator", "[codegen][rotary]") {
  for (int simd : {32, 64}) {
    INFO("simd " << simd);
    CHECK(family_codegen_error(fam::kRotary, {{"h", 4}, {"s", 6}, {"e", 16}}, {{"g1", 2}, {"g2", 3}}, simd) < kTol);
    CHECK(family_codegen_error(fam::kRotary, {{"h", 3}, {"s", 5}, {"e", 10}}, {{"g1", 1}, {"g2", 1}}, simd) < kTol);
    CHECK(family_codegen_error(fam::kSwapHalves, {{"n", 6}, {"d", 34}}, {{"g1", 3}}, simd) < kTol);
  }
  // A split part is read where its operand lies: no statement and no tile of its own, a place
  // that starts inside its operand's (the second half of a 16-wide row at element 8).
  for (bool staged : {false, true}) {
    const sgraph::Instance inst =
        sgraph::instantiate(sgraph::parse(fam::kRotary), {{"h", 4}, {"s", 6}, {"e", 16}}, {{"g1", 2}, {"g2", 3}}, sgraph::TileBudget{1 << 20});
    const backend::kir::Program p = backend::lower(inst, staged ? backend::cuda_lowering() : backend::cpu_lowering());
    const backend::kir::CustomKernel& k = p.kernels.at(0).block;
    std::vector<const backend::kir::Stmt*> stmts;
    for (const auto* phase : {&k.before, &k.body, &k.after})
      for (const backend::kir::Stmt& st : *phase) stmts.push_back(&st);
    CHECK(std::none_of(stmts.begin(), stmts.end(), [](const backend::kir::Stmt* st) { return st->kind == backend::kir::Stmt::Kind::Compute && st->op == Op::Split; }));
    CHECK(std::none_of(k.tiles.begin(), k.tiles.end(), [](const backend::kir::Tile& t) { return t.name == "x1" || t.name == "x2"; }));
    auto concat = std::find_if(stmts.begin(), stmts.end(), [](const backend::kir::Stmt* st) { return st->op == Op::Concat; });
    REQUIRE(concat != stmts.end());
    CHECK((*concat)->in.at(1).start == 0);  // x1: the first half
    auto neg = std::find_if(stmts.begin(), stmts.end(), [](const backend::kir::Stmt* st) { return st->op == Op::Neg; });
    REQUIRE(neg != stmts.end());
    CHECK((*neg)->in.at(0).start == 8);  // x2: from the middle of each row
  }
}

// A reshape read in place (sgraph::reshapes_in_place): no kernel and no tensor of its own; the
// fused kernel loads the projection's rows through the reshape and the transpose, and saves the
// scores through a transpose for the last reshape to read in place. With a plain save, the merge
// is a copy through the transpose.
TEST_CASE("codegen: a reshape and a transpose inside a fused kernel, read in place, match the interpreter", "[codegen][views]") {
  const std::string copied = [] {
    std::string s = fam::kHeadsInPlace;
    s.replace(s.find("p view [1, 0, 2] map"), 20, "p map");
    s.replace(s.find("reshape(S,"), 10, "reshape(S view [1, 0, 2],");  // a copy
    return s;
  }();
  const DimBindings dims{{"n", 3}, {"d", 8}, {"h", 4}, {"e", 6}, {"s", 5}, {"m", 7}};
  for (const std::string& family : {std::string(fam::kHeadsInPlace), copied}) {
    CHECK(test::family_error(fam::kHeadsInPlaceProgram, family, dims, {{"g1", 2}, {"g2", 3}}) < 1e-5);
    CHECK(sgraph::print(sgraph::parse(sgraph::print(sgraph::parse(family)))) == sgraph::print(sgraph::parse(family)));
    for (int simd : {32, 64}) {
      INFO("simd " << simd);
      CHECK(family_codegen_error(family, dims, {{"g1", 2}, {"g2", 3}}, simd) < kTol);
      CHECK(family_codegen_error(family, {{"n", 4}, {"d", 16}, {"h", 2}, {"e", 8}, {"s", 7}, {"m", 3}}, {{"g1", 1}, {"g2", 1}}, simd) < kTol);
    }
    for (bool staged : {false, true}) {
      const sgraph::Instance inst = sgraph::instantiate(sgraph::parse(family), dims, {{"g1", 2}, {"g2", 3}}, sgraph::TileBudget{1 << 20});
      const backend::kir::Program p = backend::lower(inst, staged ? backend::cuda_lowering() : backend::cpu_lowering());
      REQUIRE(p.kernels.size() == (family == copied ? 4u : 3u));  // reshapes read in place are no kernels
      CHECK(std::none_of(p.tensors.begin(), p.tensors.end(), [](const backend::kir::Tensor& t) { return t.name == "Q"; }));
      CHECK(p.kernels[1].reads == std::vector<std::string>{"Y", "K"});
      const backend::kir::CustomKernel& k = p.kernels[1].block;
      std::vector<const backend::kir::Place*> q, saved;  // where load q reads (bound in place, or staged); where S is written
      for (const auto* phase : {&k.before, &k.body, &k.after})
        for (const backend::kir::Stmt& st : *phase) {
          if (st.value == 0 && st.kind == backend::kir::Stmt::Kind::Bind) q.push_back(&st.out);
          if (st.value == 0 && st.kind == backend::kir::Stmt::Kind::Stage) q.push_back(&st.in.at(0));
          if (st.out.kind == backend::kir::Place::Kind::Tensor && st.out.tensor == "S") saved.push_back(&st.out);
        }
      REQUIRE(q.size() == 1);
      CHECK(q[0]->tensor == "Y");
      CHECK(q[0]->strides == std::vector<int64_t>{6, 24, 1});  // Y[n, h*e] read as [h, n, e]
      REQUIRE(saved.size() == 1);
      CHECK(saved[0]->strides == (family == copied ? std::vector<int64_t>{15, 5, 1} : std::vector<int64_t>{5, 20, 1}));
    }
  }
  // A save's view permutes whole tiles and keeps the last dim last.
  for (const char* bad : {"view [0, 2, 1]", "view [1, 1, 2]", "view [1, 0]"}) {
    std::string s = fam::kHeadsInPlace;
    s.replace(s.find("view [1, 0, 2] map {grid: 0->g1 1->g2"), 14, bad);
    INFO(s);
    CHECK_FALSE(sgraph::analyze(sgraph::parse(s)).ok());
  }
}

TEST_CASE("codegen: rms_linear family matches the evaluator", "[codegen]") {
  // d=1024: rows of X 4 KiB apart, so the matmul copies its A tile first (prism_mm's packing).
  CHECK(family_codegen_error(fam::kRmsLinear, {{"n", 16}, {"d", 1024}}, {{"g1", 4}, {"F1", 8}}) < kTol);
  CHECK(family_codegen_error(fam::kRmsLinear, {{"n", 8}, {"d", 64}}, {{"g1", 4}, {"F1", 2}}) < kTol);
  CHECK(family_codegen_error(fam::kRmsLinear, {{"n", 16}, {"d", 128}}, {{"g1", 1}, {"F1", 1}}) < kTol);
  // n = 3 rows, tiles of 5 columns: remainders of every blocking, scalar column tails.
  CHECK(family_codegen_error(fam::kRmsLinear, {{"n", 3}, {"d", 80}}, {{"g1", 16}, {"F1", 4}}) < kTol);
  // AVX2 blocking too.
  CHECK(family_codegen_error(fam::kRmsLinear, {{"n", 5}, {"d", 96}}, {{"g1", 2}, {"F1", 3}}, 32) < kTol);
}

TEST_CASE("codegen: gated_mlp family matches the evaluator", "[codegen]") {
  CHECK(family_codegen_error(fam::kGatedMlp, {{"n", 8}, {"d", 64}}, {{"g1", 4}, {"F1", 4}}) < kTol);
  CHECK(family_codegen_error(fam::kGatedMlp, {{"n", 3}, {"d", 48}}, {{"g1", 2}, {"F1", 16}}) < kTol);
  CHECK(family_codegen_error(fam::kGatedMlp, {{"n", 5}, {"d", 1024}}, {{"g1", 8}, {"F1", 16}}) < kTol);  // packed A, 5 rows
}

TEST_CASE("codegen: lora family matches the evaluator", "[codegen]") {
  CHECK(family_codegen_error(fam::kLora, {{"n", 16}, {"d", 64}, {"m", 128}, {"r", 8}}, {{"g1", 8}, {"F1", 4}}) < kTol);
  CHECK(family_codegen_error(fam::kLora, {{"n", 4}, {"d", 32}, {"m", 96}, {"r", 4}}, {{"g1", 2}, {"F1", 16}}) < kTol);
}

TEST_CASE("codegen: attention family (batched matmul, cross-block partials, combining kernel) matches the evaluator", "[codegen]") {
  DimBindings a{{"B", 4}, {"q", 1}, {"s", 64}, {"e", 16}}, b{{"B", 2}, {"q", 3}, {"s", 96}, {"e", 8}};
  CHECK(family_codegen_error(fam::kAttention, a, {{"g1", 2}, {"g2", 4}, {"F1", 2}, {"g3", 2}, {"F2", 4}}) < kTol);
  CHECK(family_codegen_error(fam::kAttention, b, {{"g1", 1}, {"g2", 8}, {"F1", 4}, {"g3", 2}, {"F2", 2}}) < kTol);
}

TEST_CASE("codegen: split contraction combined by a library reduction", "[codegen]") {
  std::string combined = std::string(fam::kSplitContractionPartials) + "kernel 1: O: f32 = sum(P, axis=0, keepdims=false)\noutput O\n";
  CHECK(family_codegen_error(combined, {{"n", 4}, {"d", 32}, {"m", 24}}, {{"g1", 4}}) < kTol);
}

TEST_CASE("codegen: a library runs its kernels a range at a time, as a per-kernel breakdown times them", "[codegen]") {
  // Two kernels: the partial products, then the library reduction that sums them into O.
  const std::string family = std::string(fam::kSplitContractionPartials) + "kernel 1: O: f32 = sum(P, axis=0, keepdims=false)\noutput O\n";
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(family), {{"n", 4}, {"d", 32}, {"m", 24}}, {{"g1", 4}}, sgraph::TileBudget{1 << 20});
  CodegenOptions options;
  options.simd_bytes = native_simd_bytes();
  LoadedLibrary lib(compile_library(generate_cpu_source(inst, options), compile_options()).path);
  REQUIRE(lib.function<KernelCountFn>(kKernelCountSymbol)() == 2);
  auto run = lib.function<EntryKernelsFn>(kEntryKernelsSymbol);
  auto inputs = test::random_inputs(inst.graph, inst.bindings, 5);
  std::vector<Tensor> want = sgraph::evaluate(inst, inputs);
  std::vector<const void*> ins;
  for (const auto& in : inst.graph.inputs) ins.push_back(inputs.at(in.name).data.data());
  Tensor out = Tensor::zeros(DType::F32, want[0].shape);
  std::vector<void*> outs{out.data.data()};
  // The first kernel alone leaves the output as it was; the second then completes it.
  REQUIRE(run(ins.data(), outs.data(), 2, 0, 1) == 0);
  CHECK(std::all_of(out.data.begin(), out.data.end(), [](float x) { return x == 0.0f; }));
  REQUIRE(run(ins.data(), outs.data(), 2, 1, 2) == 0);
  CHECK(test::relative_error(out, want[0]) < kTol);
  // Ranges past either end are clipped, and prism_entry is the whole range.
  std::fill(out.data.begin(), out.data.end(), 0.0f);
  REQUIRE(run(ins.data(), outs.data(), 1, -3, 9) == 0);
  CHECK(test::relative_error(out, want[0]) < kTol);
}

TEST_CASE("codegen: max and rms accumulators, a walked save, library kernels", "[codegen]") {
  CHECK(family_codegen_error(kMaxRmsFamily, {{"n", 6}, {"d", 40}}, {{"g1", 3}, {"F1", 4}}) < kTol);
  CHECK(family_codegen_error(kWalkedSaveFamily, {{"n", 6}, {"d", 40}}, {{"g1", 2}, {"F1", 5}}) < kTol);
  CHECK(family_codegen_error(kLibraryFamily, {{"b", 3}, {"m", 5}, {"k", 7}, {"n", 19}}, {}) < kTol);
  CHECK(family_codegen_error(kLibraryFamily, {{"b", 2}, {"m", 70}, {"k", 33}, {"n", 300}}, {}) < kTol);
}

TEST_CASE("codegen: a sum of x * x or square(x) sums the squares as it reads x, unless the product is read again", "[codegen][squares]") {
  // A row variance in one pass (sum and sum of squares over a loop), and layernorm's two-pass
  // sum of (x - m)^2 after it; then the same with the product also saved.
  const char* fused = R"(input X: f32[n, d]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: 0->g1, loop: 1}
  q = mul(x, x)
  s2 = sum(q, axis=1)
  a2 = sum_accumulate(s2)
  s1 = sum(x, axis=1)
  a1 = sum_accumulate(s1)
  y = sub(a2, a1)
  save O: f32 = y map {grid: 0->g1, loop: -}
output O
)";
  const char* two_pass = R"(input X: f32[n, d]
kernel 0: custom grid=[g1]
  x = load X map {grid: 0->g1, loop: -}
  m = sum(x, axis=1)
  c = sub(x, m)
  q = mul(c, c)
  v = sum(q, axis=1)
  save O: f32 = v map {grid: 0->g1, loop: -}
output O
)";
  const char* read_again = R"(input X: f32[n, d]
kernel 0: custom grid=[g1]
  x = load X map {grid: 0->g1, loop: -}
  q = mul(x, x)
  s = sum(q, axis=1)
  y = add(q, s)
  save O: f32 = y map {grid: 0->g1, loop: -}
output O
)";
  auto fused_sums = [](const char* family, const DimBindings& dims, const DimBindings& sizes) {
    sgraph::Instance inst = sgraph::instantiate(sgraph::parse(family), dims, sizes, sgraph::TileBudget{1 << 20});
    backend::kir::Program p = backend::lower(inst, backend::cpu_lowering());
    return fuse_squares(p);
  };
  CHECK(fused_sums(fused, {{"n", 6}, {"d", 80}}, {{"g1", 3}, {"F1", 2}}) == 1);
  CHECK(fused_sums(two_pass, {{"n", 6}, {"d", 80}}, {{"g1", 2}}) == 1);
  CHECK(fused_sums(read_again, {{"n", 6}, {"d", 80}}, {{"g1", 2}}) == 0);
  // RMSNorm as transformers writes it, x.pow(2): square(x), fused the same way.
  const std::string product = fused;
  const size_t at = product.find("mul(x, x)");
  const std::string squared = product.substr(0, at) + "square(x)" + product.substr(at + 9);
  CHECK(fused_sums(squared.c_str(), {{"n", 6}, {"d", 80}}, {{"g1", 3}, {"F1", 2}}) == 1);
  // Rows long enough for the vector fold, and a short one for its scalar tail.
  for (const DimBindings& dims : {DimBindings{{"n", 6}, {"d", 80}}, DimBindings{{"n", 4}, {"d", 6}}}) {
    CHECK(family_codegen_error(fused, dims, {{"g1", 2}, {"F1", 2}}) < kTol);
    CHECK(family_codegen_error(squared, dims, {{"g1", 2}, {"F1", 2}}) < kTol);
    CHECK(family_codegen_error(two_pass, dims, {{"g1", 2}}) < kTol);
    CHECK(family_codegen_error(read_again, dims, {{"g1", 2}}) < kTol);
  }
}

TEST_CASE("codegen: a transposed B with many rows is copied in register blocks, edges included", "[codegen][views]") {
  // W[m, d] read as W^T by 32 rows of X: copied (8 * 32 > d), kW x kW blocks transposed in
  // registers, the right and bottom edges element by element.
  const char* family = R"(input X: f32[n, d]
input W: f32[m, d]
kernel 0: custom grid=[g1]
  x = load X map {grid: 0->g1, loop: -}
  w = load W view [1, 0] map {grid: -, loop: -}
  y = matmul(x, w)
  save O: f32 = y map {grid: 0->g1, loop: -}
output O
)";
  for (int simd : {32, 64}) {
    INFO("simd bytes " << simd);
    sgraph::Instance inst = sgraph::instantiate(sgraph::parse(family), {{"n", 64}, {"d", 37}, {"m", 21}}, {{"g1", 2}}, sgraph::TileBudget{1 << 20});
    CodegenOptions options;
    options.simd_bytes = simd;
    CHECK(generate_cpu_source(inst, options).find("prism_transpose(r);") != std::string::npos);
    if (simd == 32 || native_simd_bytes() == 64) {
      CHECK(family_codegen_error(family, {{"n", 64}, {"d", 37}, {"m", 21}}, {{"g1", 2}}, simd) < kTol);
      CHECK(family_codegen_error(family, {{"n", 64}, {"d", 64}, {"m", 32}}, {{"g1", 2}}, simd) < kTol);
    }
  }
  // A 16-bit W (where no AMX tiles read it in place) too: its vectors widen as they load.
  for (const std::string dtype : {"f16", "bf16"}) {
    INFO(dtype);
    std::string typed = family;
    typed.replace(typed.find("W: f32"), 6, "W: " + dtype);
    sgraph::Instance inst = sgraph::instantiate(sgraph::parse(typed), {{"n", 64}, {"d", 37}, {"m", 21}}, {{"g1", 2}}, sgraph::TileBudget{1 << 20});
    CodegenOptions options;
    options.simd_bytes = native_simd_bytes();
    CHECK(generate_cpu_source(inst, options).find("prism_transpose(r);") != std::string::npos);
    CHECK(family_codegen_error(typed, {{"n", 64}, {"d", 37}, {"m", 21}}, {{"g1", 2}}, native_simd_bytes(), true) < kTol);
    CHECK(family_codegen_error(typed, {{"n", 64}, {"d", 64}, {"m", 32}}, {{"g1", 2}}, native_simd_bytes(), true) < kTol);
  }
}

TEST_CASE("codegen: a row max runs in vectors and is NaN wherever the row holds one", "[codegen]") {
  const char* family = R"(input X: f32[n, d]
kernel 0: custom grid=[g1]
  x = load X map {grid: 0->g1, loop: -}
  m = max(x, axis=1)
  save O: f32 = m map {grid: 0->g1, loop: -}
output O
)";
  // d = 40: two 16-lane vectors at once, then a tail (8 lanes: five vectors and no tail).
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(family), {{"n", 5}, {"d", 40}}, {{"g1", 5}}, sgraph::TileBudget{1 << 20});
  CodegenOptions options;
  options.simd_bytes = native_simd_bytes();
  std::string source = generate_cpu_source(inst, options);
  CHECK(source.find("decltype(m0 != m0) bad") != std::string::npos);
  auto inputs = test::random_inputs(inst.graph, inst.bindings, 5);
  std::vector<float>& x = inputs.begin()->second.data;
  x[0 * 40 + 3] = std::nanf("");   // in the vectors
  x[1 * 40 + 38] = std::nanf("");  // in the tail
  x[2 * 40 + 17] = 1e30f;          // the largest, mid-row
  for (int j = 0; j < 40; ++j) x[3 * 40 + j] = -std::numeric_limits<float>::infinity();
  std::vector<Tensor> want = sgraph::evaluate(inst, inputs);
  LoadedLibrary lib(compile_library(source, compile_options()).path);
  std::vector<Tensor> got = run_library(lib, inst, inputs, 1);
  REQUIRE(got[0].data.size() == 5);
  CHECK(std::isnan(got[0].data[0]));
  CHECK(std::isnan(got[0].data[1]));
  CHECK(got[0].data[2] == 1e30f);
  CHECK(got[0].data[3] == -std::numeric_limits<float>::infinity());
  for (int r = 2; r < 5; ++r) CHECK(got[0].data[size_t(r)] == want[0].data[size_t(r)]);
}

TEST_CASE("codegen: every elementwise op of the table, in a custom and a library kernel, matches the evaluator", "[codegen][ops]") {
  // d = 40: a vector and a tail; the loop walks it in 5 steps of 8.
  CHECK(family_codegen_error(fam::every_elementwise_op_family(), {{"n", 3}, {"d", 40}}, {{"g1", 3}, {"F1", 5}}) < 1e-6);
}

TEST_CASE("codegen: what it cannot lower is an InvalidArgument error", "[codegen]") {
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(as_f32(fam::kRmsLinear)), {{"n", 4}, {"d", 16}}, {{"g1", 2}, {"F1", 2}}, {});
  CodegenOptions options;
  options.simd_bytes = 48;
  CHECK_THROWS_WITH(generate_cpu_source(inst, options), Catch::Contains("simd_bytes"));
}

namespace {

// The families the search finds for each example at one small binding: `every`-th family
// compiled (1: all of them), the first `checked` checked against the evaluator.
void check_search_families(const std::vector<std::string>& examples, size_t every, size_t checked) {
  const std::map<std::string, DimBindings>& dims = test::small_example_dims();
  const sgraph::TileBudget target{1 << 20};
  for (const std::string& name : examples) {
    INFO("example " << name);
    REQUIRE(dims.count(name));
    SearchLimits limits;
    limits.threads = 2;
    limits.fast_memory_bytes = 1 << 20;
    limits.budget_s = 10;
    SearchResult r = search::search_program(test::lowered_example(name), limits);
    std::vector<sgraph::Instance> instances;
    std::vector<std::string> sources;
    for (size_t c = 0; c < r.candidates.size(); ++c) {
      if (c >= checked && c % every != 0) continue;
      sgraph::SGraph g = sgraph::parse(as_f32(r.candidates[c].text()));
      std::vector<DimBindings> sizes = sgraph::enumerate(g, dims.at(name), target, {}, 64);
      if (sizes.empty()) continue;
      // A middle choice: grids and loops of more than one block or iteration where possible.
      instances.push_back(sgraph::instantiate(g, dims.at(name), sizes[sizes.size() / 2], target));
      sources.push_back(generate_cpu_source(instances.back(), every_loop_parallel()));
    }
    WARN(name << ": " << r.candidates.size() << " families, " << sources.size() << " compiled");
    std::vector<std::string> errors;
    auto compiled = compile_libraries(sources, compile_options(), 2, &errors);
    for (size_t i = 0; i < sources.size(); ++i) {
      INFO("family\n" << sgraph::print(instances[i].graph) << "\n" << errors[i]);
      REQUIRE(errors[i].empty());
      if (i < checked) CHECK(codegen_error(instances[i], compiled[i]) < kTol);
    }
  }
}

}  // namespace

TEST_CASE("codegen: online-softmax and flash-decoding families match the evaluator", "[codegen][search][online]") {
  const sgraph::TileBudget target{1 << 20};
  for (const test::ExampleLayer& layer : test::example_layers()) {
    if (std::string(layer.name) != "sdpa" && std::string(layer.name) != "gqa_decode") continue;
    INFO(layer.name);
    SearchLimits limits;
    limits.threads = 2;
    limits.fast_memory_bytes = 1 << 20;
    limits.budget_s = 120;
    SearchResult r = search::search_program(test::lowered_text(test::layer_text(layer.name), layer.name), limits);
    int checked = 0;
    for (const auto& c : r.candidates) {
      if (c.summary.find("(online softmax)") == std::string::npos && c.summary.find("(flash-decoding)") == std::string::npos) continue;
      for (const DimBindings& dims : {layer.small, layer.second}) {
        std::vector<DimBindings> sizes = sgraph::enumerate(*c.graph, dims, target, {}, 64);
        if (sizes.empty()) continue;
        sgraph::Instance inst = sgraph::instantiate(*c.graph, dims, sizes[sizes.size() / 2], target);
        INFO("family\n" << sgraph::print(inst.graph));
        CHECK(codegen_error(inst, compile_library(generate_cpu_source(inst, every_loop_parallel()), compile_options())) < kTol);
        ++checked;
      }
      if (checked >= 6) break;
    }
    CHECK(checked >= 4);
  }
}

// A causal -inf mask leaves whole chunks of a row (the loop's pieces, a block's part of the keys)
// all -inf: each online-softmax and flash-decoding family, in the evaluator and as generated code,
// equals the reference where it is finite and is NaN only on the row masked whole (where PyTorch's
// softmax is NaN too). docs/sgraph.md, "Masked pieces".
TEST_CASE("codegen: online softmax under a causal -inf mask: finite where the reference is, NaN on a row masked whole", "[codegen][search][online][masked]") {
  const sgraph::TileBudget target{1 << 20};
  const test::ExampleLayer& layer = test::example_layer("causal_sdpa");
  SearchLimits limits;
  limits.threads = 2;
  limits.fast_memory_bytes = 1 << 20;
  limits.budget_s = 120;
  SearchResult r = search::search_program(test::lowered_text(test::layer_text(layer.name), layer.name), limits);
  std::set<std::string> kinds;
  for (const auto& c : r.candidates) {
    const bool online = c.summary.find("(online softmax)") != std::string::npos, split = c.summary.find("(flash-decoding)") != std::string::npos;
    if (!online && !split) continue;
    for (const DimBindings& dims : {layer.small, layer.second}) {
      std::vector<DimBindings> sizes = sgraph::enumerate(*c.graph, dims, target, {}, 64);
      if (sizes.empty()) continue;
      sgraph::Instance inst = sgraph::instantiate(*c.graph, dims, sizes[sizes.size() / 2], target);
      INFO("family\n" << sgraph::print(inst.graph));
      for (bool whole_row : {false, true}) {
        const auto named = test::causal_inputs(dims, whole_row);
        const Tensor want = test::causal_reference(dims, named);
        const auto inputs = test::graph_inputs(inst.graph, named);
        CHECK(test::relative_error(sgraph::evaluate(inst, inputs).at(0), want) < kTol);
        LoadedLibrary lib(compile_library(generate_cpu_source(inst, every_loop_parallel()), compile_options()).path);
        for (int threads : {1, 2}) CHECK(test::relative_error(run_library(lib, inst, inputs, threads).at(0), want) < kTol);
      }
      kinds.insert(online ? "online" : "split");
    }
    if (kinds.size() == 2) break;
  }
  CHECK(kinds.size() == 2);
}

// 16-bit layers whose statistics overflow at 16 bits: every family found (kept at its declared
// dtypes) computes them in f32 tiles and matches the reference, which keeps them in f32 too.
TEST_CASE("codegen: f16 norms on wide activations match the reference's f32 statistics", "[codegen][search][casts]") {
  const sgraph::TileBudget target{1 << 20};
  for (const test::WideLayer& layer : test::wide_layers()) {
    INFO(layer.name);
    const Program lowered = test::lowered_text(layer.text, layer.name);
    SearchLimits limits;
    limits.threads = 2;
    limits.fast_memory_bytes = 1 << 20;
    limits.budget_s = 60;
    SearchResult r = search::search_program(lowered, limits);
    const auto named = test::wide_inputs(lowered);
    const Tensor want = interpret(lowered, test::wide_dims(), named).at(0);
    int checked = 0;
    for (size_t c = 0; c < r.candidates.size() && checked < 4; c += std::max<size_t>(1, r.candidates.size() / 4)) {
      std::vector<DimBindings> sizes = sgraph::enumerate(*r.candidates[c].graph, test::wide_dims(), target, {}, 64);
      if (sizes.empty()) continue;
      sgraph::Instance inst = sgraph::instantiate(*r.candidates[c].graph, test::wide_dims(), sizes[sizes.size() / 2], target);
      INFO("family\n" << sgraph::print(inst.graph));
      LoadedLibrary lib(compile_library(generate_cpu_source(inst, every_loop_parallel()), compile_options()).path);
      CHECK(test::relative_error(run_library(lib, inst, test::graph_inputs(inst.graph, named), 2).at(0), want) < 4e-3);
      ++checked;
    }
    CHECK(checked > 0);
  }
}

// Within the tag's time budget: a spread of the families of every example.
TEST_CASE("codegen: families the search finds for the examples compile and the first ones match", "[codegen][search]") {
  check_search_families({"rms_linear", "gated_mlp", "lora", "rmsnorm_mlp", "attention"}, 4, 3);
  check_search_families({"gqa", "qk_norm_attention"}, 8, 2);
}

// Every family of every example (about 300 compiles; run by hand: prism_tests "[codegen-all]").
TEST_CASE("codegen: every family the search finds for the examples compiles", "[.][codegen-all]") {
  check_search_families({"rms_linear", "gated_mlp", "lora", "rmsnorm_mlp", "attention", "gqa", "qk_norm_attention"}, 1, 4);
}

TEST_CASE("codegen: the matmul blocking takes K in even chunks of short strips", "[codegen]") {
  // 8 rows: one 8-row block; strips of 3 x 16 floats, 16 rows (3 KiB) a chunk.
  detail::Blocking one = detail::choose_blocking(8, 2048, 4096, 64);
  CHECK(one.mr == 8);
  CHECK(one.nv == 3);
  CHECK(one.kc == 16);
  // 16 rows: two row blocks share each strip; 40 rows = 3 chunks of 14 (not 16 + 16 + 8).
  detail::Blocking two = detail::choose_blocking(16, 2048, 40, 64);  // B of 320 KiB streams
  CHECK(two.mr * two.nv + two.nv + 1 <= 32);
  CHECK(16 > two.mr);
  CHECK(two.nv == 3);
  CHECK(two.kc == 14);
  // A B that stays in the caches (80 KiB; attention's 64 KiB tiles) while more than two row blocks
  // pass over it is not streamed: strips up to 16 KiB, here K whole. A decode layer's few rows
  // read each strip of a loop step's slice of a weight once: streamed.
  CHECK(detail::choose_blocking(64, 512, 40, 64).kc == 40);
  CHECK(detail::choose_blocking(16, 512, 40, 64).kc == 14);
  CHECK(detail::choose_blocking(8, 1024, 32, 32, DType::F16).kc == 16);
  detail::Blocking tile = detail::choose_blocking(128, 128, 128, 64);
  CHECK(tile.kc * tile.nv * 16 * 4 <= 16 * 1024);
  CHECK(tile.kc >= 64);
  // 16-bit B: widening a vector takes FMA-port slots, so the block covers all 8 rows (each B
  // vector is widened once), and a strip of half the bytes takes twice the rows.
  for (DType dt : {DType::F16, DType::BF16}) {
    detail::Blocking wide = detail::choose_blocking(8, 1024, 256, 64, dt);
    CHECK(wide.mr == 8);
    CHECK(wide.kc == 3072 / (wide.nv * 16 * 2));
  }
  // AVX2: 16 registers bound the block, and a block of 8 accumulators waits on their FMAs'
  // latency: 8 rows of 16-bit B take two 4 x 3 blocks, not one 8 x 1; streamed strips are 768
  // bytes (16 rows of 48).
  detail::Blocking avx2 = detail::choose_blocking(16, 512, 128, 32);
  CHECK(avx2.mr * avx2.nv + avx2.nv + 1 <= 16);
  for (DType dt : {DType::F16, DType::BF16, DType::F32}) {
    detail::Blocking rows8 = detail::choose_blocking(8, 1024, 4096, 32, dt);
    CHECK(rows8.mr * rows8.nv + rows8.nv + 1 <= 16);
    CHECK(rows8.mr * rows8.nv >= 10);
  }
  detail::Blocking decode = detail::choose_blocking(8, 1024, 4096, 32, DType::F16);
  CHECK(decode.mr == 4);
  CHECK(decode.nv == 3);
  CHECK(decode.kc == 16);
  // AVX2's broadcasts cost more than a slot: tall tiles (attention's 32 and 64 query rows) take
  // blocks two vectors wide, not 13 x 1 with a broadcast per FMA; AVX-512 keeps its tall blocks.
  for (int64_t rows : {16, 32, 64, 128})
    for (DType dt : {DType::F16, DType::BF16, DType::F32}) {
      INFO(rows << " rows, " << dtype_name(dt));
      detail::Blocking tall = detail::choose_blocking(rows, 128, 128, 32, dt);
      CHECK(tall.nv >= 2);
      CHECK(tall.mr * tall.nv >= 10);
    }
  CHECK(detail::choose_blocking(64, 128, 128, 64, DType::F16).mr >= 8);
  // The cost model prices those FMAs the same way (widening_factor, relative to a wide f32 tile):
  // 256 x 8 (one vector, a broadcast per FMA) above 256 x 32 (6 x 2 blocks) and a decode layer's
  // 8 x 1024 (4 x 3).
  auto factor = [](int64_t m, int64_t n) { return detail::widening_factor(detail::choose_blocking(m, n, 64, 32, DType::F16), DType::F16, 32); };
  CHECK(factor(256, 8) > factor(256, 32));
  CHECK(factor(256, 8) > factor(8, 1024));
  CHECK(factor(256, 32) > 1.0);
}

TEST_CASE("codegen: AVX2 f32 blocks count B's loads folded into the FMAs; f32 strips of aliasing rows fit L1's ways", "[codegen]") {
  // 16 rows of f32: 4 x 3 takes all 16 registers, so B is loaded once per row (12 loads a step, not
  // 3); 6 x 2 keeps B in registers.
  const detail::Blocking rows16 = detail::choose_blocking(16, 512, 64, 32, DType::F32);
  CHECK(rows16.mr == 6);
  CHECK(rows16.nv == 2);
  // 16-bit B must be widened into registers: nothing folds, 6 x 2 either way.
  CHECK(detail::choose_blocking(16, 512, 64, 32, DType::F16).mr * detail::choose_blocking(16, 512, 64, 32, DType::F16).nv >= 10);
  // B rows 8 KiB apart share L1's sets: three row blocks over a strip of one-line rows keep 8 of them
  // (L1's ways); rows 2 KiB apart fall in two sets, 16; rows 8 KiB + 64 bytes apart do not alias.
  CHECK(rows16.kc == 64);  // the stride unknown: K whole (a 128 KiB B that stays in the caches)
  CHECK(detail::choose_blocking(16, 512, 64, 32, DType::F32, false, 8192).kc == 8);
  CHECK(detail::choose_blocking(16, 512, 64, 32, DType::F32, false, 2048).kc == 16);
  CHECK(detail::choose_blocking(16, 512, 64, 32, DType::F32, false, 8192 + 64).kc == 64);
  // One row block per strip (each line read once), and 16-bit strips: unchanged.
  CHECK(detail::choose_blocking(2, 512, 64, 32, DType::F32, false, 8192).kc == detail::choose_blocking(2, 512, 64, 32, DType::F32).kc);
  CHECK(detail::choose_blocking(16, 512, 64, 32, DType::F16, false, 8192).kc == detail::choose_blocking(16, 512, 64, 32, DType::F16).kc);
}

TEST_CASE("codegen: each matmul of a loop body prefetches the next one's B, the last the first's next tile", "[codegen]") {
  sgraph::Instance inst =
      sgraph::instantiate(sgraph::parse(as_f32(fam::kGatedMlp)), {{"n", 8}, {"d", 64}}, {{"g1", 2}, {"F1", 4}}, sgraph::TileBudget{1 << 20});
  const std::string source = generate_cpu_source(inst, CodegenOptions{});
  // Wg's matmul prefetches Wu's tile of this iteration; Wu's, Wg's tile of the next one.
  const std::string wg_tile = "(t1 + f * 1024L + b0 * 32L)", wu_tile = "(t2 + f * 1024L + b0 * 32L)";
  INFO(source);
  CHECK(source.find(", " + wu_tile + ");") != std::string::npos);
  CHECK(source.find(", (t1 + (f + 1 < 4L ? f + 1 : f) * 1024L + b0 * 32L));") != std::string::npos);
  CHECK(source.find(wg_tile) != std::string::npos);
  // One matmul in the body: the default (the rows after its own B).
  sgraph::Instance one =
      sgraph::instantiate(sgraph::parse(as_f32(fam::kRmsLinear)), {{"n", 8}, {"d", 64}}, {{"g1", 2}, {"F1", 4}}, sgraph::TileBudget{1 << 20});
  CHECK(generate_cpu_source(one, CodegenOptions{}).find("f + 1 <") == std::string::npos);
}

TEST_CASE("codegen: a 16-bit library matmul splits B into row pieces 4 KiB long, narrower only to keep every core busy", "[codegen][library]") {
  const std::string family = library_matmul("bf16");
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(family), {{"n", 8}, {"d", 64}, {"m", 4096}}, {}, sgraph::TileBudget{1 << 20});
  CodegenOptions options;
  options.simd_bytes = 64;
  options.cores = 2;
  CHECK_THAT(generate_cpu_source(inst, options), Catch::Contains("prism_mm<8, 2048, 64,"));
  options.cores = 16;
  CHECK_THAT(generate_cpu_source(inst, options), Catch::Contains("prism_mm<8, 256, 64,"));
  // Rounded to bf16 like the evaluator, up to a unit in the last place where sums differ in order.
  CHECK(family_codegen_error(family, {{"n", 5}, {"d", 300}, {"m", 600}}, {}, native_simd_bytes(), true) < 1e-2);
}

TEST_CASE("codegen: an AVX2 library matmul whose B stays in the caches takes 3 KiB strips, one that streams 768-byte ones", "[codegen][library]") {
  const DimBindings dims = {{"n", 16}, {"d", 1024}, {"m", 1024}};  // W: 2 MiB
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(library_matmul("f16")), dims, {}, sgraph::TileBudget{1 << 20});
  // Two cores: chunks of 16 x 512, each a 1024 x 512 piece of W.
  auto call = [](bool resident) {
    detail::Blocking b = detail::choose_blocking(16, 512, 1024, 32, DType::F16, resident);
    const int64_t strip = b.kc * b.nv * 8 * 2;  // bytes of a strip: kc rows of nv 8-float vectors of f16
    CHECK(strip <= (resident ? 3072 : 768));
    CHECK(strip > (resident ? 2048 : 512));
    return "prism_mm<16, 512, 1024, 1024, 1024, 512, false, " + std::to_string(b.mr) + ", " + std::to_string(b.nv) + ", " +
           std::to_string(b.kc) + ">";
  };
  CodegenOptions options;
  options.simd_bytes = 32;
  options.cores = 2;
  CHECK_THAT(generate_cpu_source(inst, options), Catch::Contains(call(false)));  // caches unknown
  options.cache_bytes = 8 << 20;  // X, W and P (2.06 MiB) in more than a quarter of them
  CHECK_THAT(generate_cpu_source(inst, options), Catch::Contains(call(false)));
  options.cache_bytes = 34 << 20;  // a Zen 3's last level and second levels
  CHECK_THAT(generate_cpu_source(inst, options), Catch::Contains(call(true)));
  // AVX-512's strips are 3 KiB either way.
  CHECK(detail::choose_blocking(16, 512, 1024, 64, DType::F16, true).kc == detail::choose_blocking(16, 512, 1024, 64, DType::F16, false).kc);
}

TEST_CASE("codegen: sums across lanes (one vector, four at once) are the sums, at both vector widths", "[codegen]") {
  for (int simd : {32, 64}) {
    INFO(simd << "-byte vectors");
    const int w = simd / 4;
    const std::string source = detail::prelude(simd) +
                               "extern \"C\" void prism_sums(float* out) {\n"
                               "  vf v[4];\n"
                               "  for (int k = 0; k < 4; ++k)\n"
                               "    for (int i = 0; i < int(kW); ++i) v[k][i] = float((k + 1) * 100 + i);\n"
                               "  prism_hsum4(v[0], v[1], v[2], v[3], out);\n"
                               "  out[4] = prism_hsum(v[2]);\n}\n";
    CompileOptions options = compile_options();
    if (simd == 64 && native_simd_bytes() != 64) options.flags.push_back("-mno-avx512f");  // vector extensions split it
    LoadedLibrary lib(compile_library(source, options).path);
    float out[5] = {};
    lib.function<void (*)(float*)>("prism_sums")(out);
    for (int k = 0; k < 4; ++k) CHECK(out[k] == float((k + 1) * 100 * w + w * (w - 1) / 2));
    CHECK(out[4] == float(300 * w + w * (w - 1) / 2));
  }
}

TEST_CASE("codegen: bf16 x bf16 matmuls take vdpbf16ps where the CPU has it (or emulated) and match", "[codegen][bf16]") {
  if (native_simd_bytes() != 64) return;  // the dot kernel is AVX-512's
  // The prelude selects the dot kernel for bf16 x bf16 only with the instruction (or its emulation).
  auto selects = [&](const std::vector<std::string>& flags) {
    const std::string source = detail::prelude(64) + "static_assert(prism_dot<prism_bf16, prism_bf16>::value, \"\");\n"
                               "static_assert(!prism_dot<float, prism_bf16>::value && !prism_dot<prism_f16, prism_f16>::value, \"\");\n"
                               "void prism_use(const prism_bf16* a, const prism_bf16* b, float* c) {\n"
                               "  prism_mm<8, 64, 33, 33, 64, 64, false, 8, 2, 16>(a, b, c);\n}\n";
    CompileOptions options = compile_options();
    options.flags.insert(options.flags.end(), flags.begin(), flags.end());
    try {
      compile_library(source, options);
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  const std::vector<std::string> emulate = {"-DPRISM_EMULATE_AVX512BF16"};
  CHECK(selects(emulate));
  CHECK_FALSE(selects({"-mno-avx512bf16"}));
  CHECK(selects({"-mavx512bf16"}));  // the instruction itself (compiled, not run: this CPU may lack it)
  CHECK_FALSE(selects({"-mavx512bf16", "-DPRISM_NO_BF16_DOT"}));  // the backend's: slower than widening here
  // A library matmul (one row block; odd K: the last row pairs with zeros; column tails), and a
  // custom kernel whose K loop accumulates tile products (two row blocks, K chunks).
  const char* library = R"(input X: bf16[n, d]
input W: bf16[d, m]
kernel 0: P: bf16 = matmul(X, W)
output P
)";
  CHECK(family_codegen_error(library, {{"n", 5}, {"d", 301}, {"m", 600}}, {}, 64, true, emulate) < 1e-2);
  std::string custom = fam::kRmsLinear;
  for (size_t at = 0; (at = custom.find(": f16", at)) != std::string::npos; at += 5) custom.replace(at, 5, ": bf16");
  CHECK(family_codegen_error(custom, {{"n", 11}, {"d", 192}}, {{"g1", 2}, {"F1", 3}}, 64, true, emulate) < 1e-2);
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bf16")) {  // and the instruction itself, where this CPU has it
    CHECK(selects({}));
    CHECK(family_codegen_error(library, {{"n", 5}, {"d", 301}, {"m", 600}}, {}, 64, true, {}) < 1e-2);
    CHECK(family_codegen_error(custom, {{"n", 11}, {"d", 192}}, {{"g1", 2}, {"F1", 3}}, 64, true, {}) < 1e-2);
  }
}

TEST_CASE("codegen: bf16 x bf16 matmuls run on AMX tiles where the CPU has them and Linux grants them, and match", "[codegen][bf16]") {
  // Where it has none, the source still compiles (the tiles are inline assembly) and its
  // kernels take the vector path at run time.
  const bool tiles = cpu_features(describe_cpu()).bf16_amx_gflops > 0;
  INFO((tiles ? "on the tiles" : "no AMX here: the vector fallback"));
  // Rows: one partial block of 5, and 37 (two of 16 and 5); K: 301 (a last chunk of 13), 96, 64;
  // columns: 600 (nine strips and 24), 130, 64. At most 8 rows (5; 8 with K 160, five visits of
  // 32 rows, and 1088 columns, 17 strips) take the kernel whose A tile holds each row twice.
  // Where B streams (16 rows or fewer), blocks are kAmxStreamColumns wide: 2200 columns are one
  // whole block and one of 152 (two strips and 24), at 8 and at 16 rows (K 80: visits of 64 and 16).
  // More rows against a B past 1 MiB (a prefill): 37 rows as blocks of 16, 16 and 5 that share each
  // visit's piece of B (K 600: a panel of 512 and one of 88; 1000 columns: 512 and 488).
  check_amx_library_matmuls("bf16",
                            {{{"n", 5}, {"d", 301}, {"m", 600}},
                             {{"n", 37}, {"d", 96}, {"m", 130}},
                             {{"n", 16}, {"d", 64}, {"m", 64}},
                             {{"n", 8}, {"d", 160}, {"m", 1088}},
                             {{"n", 8}, {"d", 80}, {"m", 2200}},
                             {{"n", 16}, {"d", 80}, {"m", 2200}},
                             {{"n", 37}, {"d", 600}, {"m", 1000}}},
                            1e-2);
  // A custom kernel accumulating tile products over its loop (two row blocks, K chunks), and a
  // batched library matmul whose B is broadcast.
  std::string custom = fam::kRmsLinear;
  for (size_t at = 0; (at = custom.find(": f16", at)) != std::string::npos; at += 5) custom.replace(at, 5, ": bf16");
  CHECK(family_codegen_error(custom, {{"n", 11}, {"d", 192}}, {{"g1", 2}, {"F1", 3}}, 64, true, {}, true) < 1e-2);
  CHECK(family_codegen_error(custom, {{"n", 20}, {"d", 256}}, {{"g1", 4}, {"F1", 2}}, 64, true, {}, true) < 1e-2);
  CHECK(family_codegen_error(custom, {{"n", 8}, {"d", 256}}, {{"g1", 2}, {"F1", 4}}, 64, true, {}, true) < 1e-2);  // A held twice
  CHECK(family_codegen_error(custom, {{"n", 3}, {"d", 96}}, {{"g1", 1}, {"F1", 3}}, 64, true, {}, true) < 1e-2);
  CHECK(family_codegen_error(library_matmul("bf16", true), {{"b", 3}, {"n", 9}, {"d", 70}, {"m", 100}}, {}, 64, true, {}, true) < 1e-2);
  // The cost model's access pattern for the tiles is the kernels' block widths: streaming bf16 B's
  // wide blocks, else (and out of memory for the wide C tiles) the narrow ones.
  static_assert(detail::kAmxStreamColumns > 2200 - 256 && detail::kAmxStreamColumns < 2200, "2200 columns: one wide block and a part");
  CHECK_THAT(std::string(detail::kAmxKernel), Catch::Contains("nb = PRISM_AMX_STREAM_COLUMNS;"));
  CHECK_THAT(std::string(detail::kAmxKernel), Catch::Contains("nb = PRISM_AMX_COLUMNS;"));
  CHECK_THAT(detail::prelude(64, true), Catch::Contains("#define PRISM_AMX_COLUMNS " + std::to_string(detail::kAmxBlockColumns) + " "));
  CHECK_THAT(detail::prelude(64, true), Catch::Contains("#define PRISM_AMX_STREAM_COLUMNS " + std::to_string(detail::kAmxStreamColumns) + " "));
  CHECK(detail::amx_block_columns(DType::BF16, DType::BF16, 8, 4096, 2048) == detail::kAmxStreamColumns);
  CHECK(detail::amx_block_columns(DType::BF16, DType::BF16, 32, 128, 512) == detail::kAmxBlockColumns);  // B cached
  CHECK(detail::amx_block_columns(DType::F16, DType::F16, 16, 4096, 2048) == detail::kAmxBlockColumns);
}

TEST_CASE("codegen: f16 x f16 matmuls run on AMX tiles split into bf16 pairs, exact products to the output's rounding", "[codegen][f16]") {
  // Where the CPU has no tiles, the same sources take the FMA kernels at run time.
  const bool tiles = cpu_features(describe_cpu()).bf16_amx_gflops > 0 && native_simd_bytes() == 64;
  INFO((tiles ? "on the tiles" : "no AMX here: the vector fallback"));
  // Every product is exact and the sums are f32, so what differs from the evaluator is the order
  // of the sums and the output's rounding to f16 (2^-11).
  constexpr double kF16Tol = 1e-3;
  // Rows 13 (one partial block) and 37 (16, 16 and 5); K 301 (a last 16 rows of 13), 96, 64;
  // columns 600 (a last strip of 24), 130, 64. (From kAmxF16MinRows rows: fewer take the FMAs.)
  check_amx_library_matmuls("f16",
                            {{{"n", 13}, {"d", 301}, {"m", 600}}, {{"n", 37}, {"d", 96}, {"m", 130}}, {{"n", 16}, {"d", 64}, {"m", 64}}, {{"n", 5}, {"d", 40}, {"m", 70}}},
                            kF16Tol);
  // A custom kernel accumulating tile products over its loop (K in pieces of 64 and 128), and a
  // batched library matmul whose B is broadcast.
  CHECK(family_codegen_error(fam::kRmsLinear, {{"n", 14}, {"d", 192}}, {{"g1", 2}, {"F1", 3}}, 64, true, {}, true) < kF16Tol);
  CHECK(family_codegen_error(fam::kRmsLinear, {{"n", 20}, {"d", 256}}, {{"g1", 4}, {"F1", 2}}, 64, true, {}, true) < kF16Tol);
  CHECK(family_codegen_error(library_matmul("f16", true), {{"b", 3}, {"n", 12}, {"d", 70}, {"m", 100}}, {}, 64, true, {}, true) < kF16Tol);
  CHECK_THAT(detail::prelude(64, true), Catch::Contains("#define PRISM_AMX_F16_ROWS " + std::to_string(detail::kAmxF16MinRows) + " "));

  // The split at f16's ends: subnormal weights and activations (down to 2^-24), weights near
  // f16's largest, 0 and -0. Each output within 2^-10 of the sum of its products' magnitudes.
  const DimBindings dims = {{"n", 14}, {"d", 80}, {"m", 70}};
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(library_matmul("f16")), dims, {}, sgraph::TileBudget{1 << 20});
  CodegenOptions options;
  options.simd_bytes = 64;
  options.amx = true;
  LoadedLibrary lib(compile_library(generate_cpu_source(inst, options), compile_options()).path);
  auto inputs = test::random_inputs(inst.graph, inst.bindings, 5);
  std::vector<float>&x = inputs.at("X").data, &w = inputs.at("W").data;
  const float ends[] = {5.96e-8f, -5.96e-8f, 3.0e-5f, 6.1e-5f, 0.0f, -0.0f, 30000.0f, -16384.0f, 1.0009766f};
  for (size_t i = 0; i < w.size(); i += 7) w[i] = round_to(DType::F16, ends[i % 9]);
  for (size_t i = 0; i < x.size(); i += 5) x[i] = round_to(DType::F16, i % 2 ? 1.2e-6f : -2.5e-3f);
  std::vector<Tensor> want = sgraph::evaluate(inst, inputs);
  std::vector<Tensor> got = run_library(lib, inst, inputs, 2);
  double worst = 0;
  for (long i = 0; i < 14; ++i)
    for (long j = 0; j < 70; ++j) {
      double magnitude = 0;
      for (long k = 0; k < 80; ++k) magnitude += std::fabs(double(x[i * 80 + k]) * double(w[k * 70 + j]));
      worst = std::max(worst, std::fabs(double(got[0].data[i * 70 + j]) - double(want[0].data[i * 70 + j])) / std::max(magnitude, 1e-30));
    }
  CHECK(worst < 1.0 / 1024);
}

// X @ W accumulated over the loop at `dtype`, or exp(X) @ W (`computed`: A is a computed f32 tile,
// B a 16-bit weight at `dtype`); the output stays f32, so what differs from the evaluator is only
// the order of the sums and A's split (within 2^-16 of each value).
std::string accumulated_matmul(const std::string& dtype, bool computed = true) {
  return "input X: " + dtype + "[n, d]\ninput W: " + dtype + R"([d, m]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: -, loop: 1}
  w = load W map {grid: 1->g1, loop: 0}
)" + (computed ? "  e = exp(x)\n  p = matmul(e, w)\n" : "  p = matmul(x, w)\n") + R"(  acc = sum_accumulate(p)
  save O: f32 = acc map {grid: 1->g1, loop: -}
output O
)";
}

TEST_CASE("codegen: an f32 A whose rows alias in L1 is copied away whole, or a slice of K at a time, and matches", "[codegen]") {
  // X @ W at f32 with the whole of K in one tile (F1 = 1): X read in place. 16 x 3072 (192 KiB, rows
  // 12 KiB apart) does not fit the 64 KiB copy: slices of K, the last one shorter; 13 x 2048 (a
  // partial row block); 4 x 1024 (16 KiB) copied whole; rows 3080 floats apart read in place.
  for (int simd : {32, native_simd_bytes()})
    for (auto [n, d] : std::vector<std::pair<int64_t, int64_t>>{{16, 3072}, {13, 2048}, {4, 1024}, {16, 3080}}) {
      INFO("n=" << n << " d=" << d << ", " << simd << "-byte vectors");
      CHECK(family_codegen_error(accumulated_matmul("f32", false), {{"n", n}, {"d", d}, {"m", 40}}, {{"g1", 1}, {"F1", 1}}, simd, true) < kTol);
    }
}

TEST_CASE("codegen: a cached B whose rows share L1's sets is copied a K chunk at a time under many row blocks, and matches", "[codegen]") {
  // GQA's 64 x 64 @ 64 x 128 tile of a K^T with rows 8 KiB apart (bf16): 11 row blocks of 6 pass over
  // each strip; copied into rows 256 + 64 bytes apart. f32 rows 4 KiB apart under 32 rows: copied,
  // and K whole instead of the 16 rows L1's ways allow in place.
  const detail::Blocking gqa = detail::choose_blocking(64, 128, 64, 32, DType::BF16, false, 8192);
  CHECK(gqa.pack_ld == 160);
  const detail::Blocking wide = detail::choose_blocking(32, 128, 128, 32, DType::F32, false, 4096);
  CHECK(wide.pack_ld == 144);
  CHECK(wide.kc == 128);
  // In place: 16 rows (LoRA's: 3 row blocks), rows 2 KiB apart (bf16 attention's K^T), rows that
  // do not share sets, a B that streams (too large to stay in the caches), a stride unknown.
  CHECK(detail::choose_blocking(16, 512, 32, 32, DType::BF16, false, 8192).pack_ld == 0);
  CHECK(detail::choose_blocking(64, 128, 128, 32, DType::BF16, false, 2048).pack_ld == 0);
  CHECK(detail::choose_blocking(64, 128, 64, 32, DType::BF16, false, 8192 + 64).pack_ld == 0);
  CHECK(detail::choose_blocking(64, 2048, 4096, 32, DType::BF16, false, 8192).pack_ld == 0);
  CHECK(detail::choose_blocking(64, 128, 64, 32, DType::BF16).pack_ld == 0);
  CHECK(detail::choose_blocking(16, 512, 64, 32, DType::F32, false, 8192).kc == 8);  // 16 f32 rows: capped, in place
  // X @ W with W's rows 12 KiB apart, tiles of 96 columns (12 vectors: AVX2's strips of 2, or a
  // narrower last strip) and of 12 (one vector and a scalar tail), K in chunks of 64 and a K of
  // 48; 40 rows (AVX2: 6 blocks of 6 and one of 4) and 53.
  for (int simd : {32, native_simd_bytes()})
    for (const std::string dtype : {"bf16", "f16", "f32"}) {
      const int64_t m = dtype == "f32" ? 3072 : 6144;
      for (auto [n, d, g1, f1] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{{40, 128, m / 96, 2}, {53, 48, m / 12, 1}}) {
        INFO(dtype << " n=" << n << " d=" << d << " columns " << m / g1 << ", " << simd << "-byte vectors");
        const DimBindings dims = {{"n", n}, {"d", d}, {"m", m}}, sizes = {{"g1", g1}, {"F1", f1}};
        sgraph::Instance inst = sgraph::instantiate(sgraph::parse(accumulated_matmul(dtype, false)), dims, sizes, sgraph::TileBudget{1 << 20});
        CodegenOptions options;
        options.simd_bytes = simd;
        const std::string source = generate_cpu_source(inst, options);
        const DType b_dtype = *parse_dtype(dtype);
        const detail::Blocking b = detail::choose_blocking(n, m / g1, d / f1, simd, b_dtype, false, m * int64_t(dtype_bytes(b_dtype)));
        if (simd == 32) CHECK(b.pack_ld > 0);  // AVX-512's taller blocks may pass fewer times
        if (b.pack_ld > 0) CHECK_THAT(source, Catch::Contains(", " + std::to_string(b.pack_ld) + ">("));
        CHECK(family_codegen_error(accumulated_matmul(dtype, false), dims, sizes, simd, true) < (dtype == "f32" ? kTol : 1e-2));
      }
    }
  // vdpbf16ps (emulated) reads the copied rows in pairs.
  const DimBindings dims = {{"n", 53}, {"d", 128}, {"m", 6144}}, sizes = {{"g1", 64}, {"F1", 2}};
  CHECK(detail::choose_blocking(53, 96, 64, 64, DType::BF16, false, 12288).pack_ld > 0);
  CHECK(family_codegen_error(accumulated_matmul("bf16", false), dims, sizes, 64, true, {"-DPRISM_EMULATE_AVX512BF16"}) < 1e-2);
}

TEST_CASE("codegen: f32 x bf16 and f32 x f16 matmuls run on AMX tiles, A split into bf16 hi and lo", "[codegen][bf16][f16]") {
  const bool tiles = cpu_features(describe_cpu()).bf16_amx_gflops > 0 && native_simd_bytes() == 64;
  INFO((tiles ? "on the tiles" : "no AMX here: the vector fallback"));
  // A rounded to one bf16 instead errs by about 1e-3; hi + lo by 2^-16.
  constexpr double kSplitTol = 1e-4;
  for (const std::string dtype : {"bf16", "f16"}) {
    // Rows 8 (bf16's least on the tiles), 13 (one partial block), 37 (16, 16, 5); K pieces of
    // 303 / 3 = 101 (a tile row's tail), 96, 64 / 2; columns 600 / 2 (a last strip of 44), 130,
    // 64 / 2.
    const std::vector<std::pair<DimBindings, DimBindings>> shapes = {
        {{{"n", 8}, {"d", 96}, {"m", 130}}, {{"g1", 1}, {"F1", 1}}},
        {{{"n", 13}, {"d", 303}, {"m", 600}}, {{"g1", 2}, {"F1", 3}}},
        {{{"n", 37}, {"d", 96}, {"m", 130}}, {{"g1", 1}, {"F1", 1}}},
        {{{"n", 37}, {"d", 64}, {"m", 64}}, {{"g1", 2}, {"F1", 2}}},
    };
    for (const auto& [dims, sizes] : shapes) {
      INFO(dtype << " n=" << dims.at("n") << " d=" << dims.at("d") << " m=" << dims.at("m"));
      CHECK(family_codegen_error(accumulated_matmul(dtype), dims, sizes, 64, true, {}, true) < kSplitTol);
    }
  }
  CHECK_THAT(detail::prelude(64, true), Catch::Contains("#define PRISM_AMX_WIDE_ROWS " + std::to_string(detail::kAmxWideMinRows) + " "));
}

// X @ W^T with W stored [m, d] as nn.Linear keeps it, read in place by the NT kernel, accumulated
// over the loop; X at `dtype` as loaded, or exp(X) (`computed`: an f32 A). The output stays f32.
std::string nt_matmul(const std::string& dtype, bool computed) {
  return "input X: " + dtype + "[n, d]\ninput W: " + dtype + R"([m, d]
kernel 0: custom grid=[g1] loop=F1
  x = load X map {grid: -, loop: 1}
  w = load W view [1, 0] map {grid: 1->g1, loop: 0}
)" + (computed ? "  e = exp(x)\n  p = matmul(e, w)\n" : "  p = matmul(x, w)\n") + R"(  acc = sum_accumulate(p)
  save O: f32 = acc map {grid: 1->g1, loop: -}
output O
)";
}

TEST_CASE("codegen: nn.Linear weights (W^T read in place) run on AMX tiles as C^T = W A^T, and match", "[codegen][bf16][f16]") {
  const bool tiles = cpu_features(describe_cpu()).bf16_amx_gflops > 0 && native_simd_bytes() == 64;
  INFO((tiles ? "on the tiles" : "no AMX here: the vector fallback"));
  // Rows 4 (bf16's least), 13 (one partial block), 37 (16, 16, 5), 16; K 200, 303 (a tile row's
  // tail), 640 / 2, 1024, 16 (less than a tile row), each all at once; columns 22 (a strip of 32
  // rows of W with 6 in its second tile), 600 / 2 (nine strips and one of 12), 130, 64. Without the
  // tiles, the NT kernel reads W in place where 8 * n <= d / F1.
  const std::vector<std::pair<DimBindings, DimBindings>> shapes = {
      {{{"n", 4}, {"d", 200}, {"m", 22}}, {{"g1", 1}, {"F1", 1}}},
      {{{"n", 13}, {"d", 303}, {"m", 600}}, {{"g1", 2}, {"F1", 1}}},
      {{{"n", 37}, {"d", 640}, {"m", 130}}, {{"g1", 1}, {"F1", 2}}},
      {{{"n", 16}, {"d", 1024}, {"m", 64}}, {{"g1", 1}, {"F1", 1}}},
      {{{"n", 4}, {"d", 16}, {"m", 64}}, {{"g1", 1}, {"F1", 1}}},
  };
  for (const auto& [dtype, computed, tol] : {std::tuple{"bf16", false, 1e-5}, {"bf16", true, 1e-4}, {"f16", false, 1e-5}, {"f16", true, 1e-4}})
    for (const auto& [dims, sizes] : shapes) {
      INFO(dtype << (computed ? " f32 A" : "") << " n=" << dims.at("n") << " d=" << dims.at("d") << " m=" << dims.at("m"));
      const std::string family = nt_matmul(dtype, computed);
      sgraph::Instance inst = sgraph::instantiate(sgraph::parse(family), dims, sizes, sgraph::TileBudget{1 << 20});
      if (8 * dims.at("n") <= dims.at("d") / sizes.at("F1"))
        CHECK_THAT(generate_cpu_source(inst, {}), Catch::Contains("prism_mm_nt<" + std::to_string(dims.at("n")) + ","));
      CHECK(family_codegen_error(family, dims, sizes, 64, true, {}, true) < tol);
    }
  // With the tiles, W^T is read in place by any rows the NT kernel takes on them (4 rows of bf16
  // at K = 16, where the FMA kernel's rule, 8 * rows <= K, copies it), not by fewer.
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(nt_matmul("bf16", false)), {{"n", 4}, {"d", 16}, {"m", 64}},
                                              {{"g1", 1}, {"F1", 1}}, sgraph::TileBudget{1 << 20});
  CodegenOptions amx;
  amx.simd_bytes = 64;
  amx.amx = true;
  CHECK_THAT(generate_cpu_source(inst, amx), Catch::Contains("prism_mm_nt<4,"));
  CHECK_THAT(generate_cpu_source(inst, {}), !Catch::Contains("prism_mm_nt<4,"));
  inst = sgraph::instantiate(sgraph::parse(nt_matmul("bf16", true)), {{"n", 4}, {"d", 16}, {"m", 64}}, {{"g1", 1}, {"F1", 1}},
                             sgraph::TileBudget{1 << 20});
  CHECK_THAT(generate_cpu_source(inst, amx), !Catch::Contains("prism_mm_nt<4,"));
  // A library kernel's matmul with W^T at 16 bits (no vendor BLAS): the NT kernel per chunk, on
  // the tiles (37 rows: three blocks of A, which pass over W's strips together in visits of 16 K
  // steps, bf16's 303 in one, f16's in two; 20 rows with K 1100: bf16's 35 steps in three visits)
  // or the FMAs (3), rounded into the output's dtype.
  for (const auto& [dtype, tol] : {std::pair{"bf16", 1e-2}, {"f16", 1e-3}})
    for (auto [n, d] : {std::pair<int64_t, int64_t>{37, 303}, {3, 303}, {20, 1100}}) {
      INFO("library " << dtype << " n=" << n << " d=" << d);
      const std::string library = std::string("input X: ") + dtype + "[n, d]\ninput W: " + dtype + "[m, d]\nkernel 0: P: " + dtype +
                                  " = matmul(X, W view [1, 0])\noutput P\n";
      CHECK(family_codegen_error(library, {{"n", n}, {"d", d}, {"m", 130}}, {}, 64, true, {}, true) < tol);
    }
  CHECK_THAT(detail::prelude(64, true), Catch::Contains("#define PRISM_AMX_NT_ROWS " + std::to_string(detail::kAmxNtMinRows) + " "));
}


TEST_CASE("codegen: AVX2's NT kernel widens a 16-bit A first for a bf16 B and takes 4 x 3 blocks, edges included, and matches", "[codegen][bf16][f16]") {
  // Rows 4, 13 (4, 4, 4, 1), 16; K 200, 303 (a vector tail), 1024; columns 22 (7 blocks of 3 and
  // one), 64. A computed f32 A (exp(X)) is not widened, nor one against an f16 B: 2 x 5 as before.
  // 13 and 16 rows take the packed form (its A widened, whatever the NT blocks).
  const std::vector<std::pair<DimBindings, DimBindings>> shapes = {
      {{{"n", 4}, {"d", 200}, {"m", 22}}, {{"g1", 1}, {"F1", 1}}},
      {{{"n", 13}, {"d", 303}, {"m", 64}}, {{"g1", 2}, {"F1", 1}}},
      {{{"n", 16}, {"d", 1024}, {"m", 64}}, {{"g1", 1}, {"F1", 1}}},
  };
  CodegenOptions avx2;
  avx2.simd_bytes = 32;
  for (const auto& [dtype, computed, tol] : {std::tuple{"bf16", false, 1e-5}, {"bf16", true, 1e-4}, {"f16", false, 1e-5}, {"f16", true, 1e-4}})
    for (const auto& [dims, sizes] : shapes) {
      INFO(dtype << (computed ? " f32 A" : "") << " n=" << dims.at("n") << " d=" << dims.at("d") << " m=" << dims.at("m"));
      const std::string family = nt_matmul(dtype, computed);
      sgraph::Instance inst = sgraph::instantiate(sgraph::parse(family), dims, sizes, sgraph::TileBudget{1 << 20});
      const std::string source = generate_cpu_source(inst, avx2);
      CHECK_THAT(source, Catch::Contains("prism_mm_nt<" + std::to_string(dims.at("n")) + ","));
      // Rows enough for two full row blocks add the packed form's blocks (nt_packing), A widened.
      const detail::Blocking packed = detail::nt_packing(dims.at("n"), dims.at("m") / sizes.at("g1"), dims.at("d"), 32);
      const bool widened = !computed && dtype == std::string("bf16");
      const std::string packing = packed.mr == 0 ? "" : std::string(widened ? "" : ", false") + ", " + std::to_string(packed.mr) + ", " +
                                                            std::to_string(packed.nv) + ", " + std::to_string(packed.kc);
      CHECK_THAT(source, Catch::Contains((widened ? ", 4, 3, true" : ", 2, 5") + packing + ">("));
      CHECK(family_codegen_error(family, dims, sizes, 32, true) < tol);
    }
}
TEST_CASE("codegen: a 16-bit library matmul rounds each chunk into its output, tail chunks included", "[codegen][library]") {
  // 130 rows: chunks of 64, 64 and 2; 2100 columns: 2048 and 52 at bf16 (1024-column pieces at f16
  // for 4 KiB rows: 1024, 1024 and 52). Only the output's rounding differs from the evaluator.
  for (const char* dtype : {"f16", "bf16"}) {
    INFO(dtype);
    const double tol = std::string(dtype) == "f16" ? 2e-3 : 1e-2;
    CHECK(family_codegen_error(library_matmul(dtype), {{"n", 130}, {"d", 40}, {"m", 2100}}, {}, native_simd_bytes(), true) < tol);
    CHECK(family_codegen_error(library_matmul(dtype, true), {{"b", 3}, {"n", 9}, {"d", 33}, {"m", 70}}, {}, native_simd_bytes(), true) < tol);
    sgraph::Instance inst = sgraph::instantiate(sgraph::parse(library_matmul(dtype)), {{"n", 130}, {"d", 40}, {"m", 2100}}, {}, sgraph::TileBudget{1 << 20});
    const std::string source = generate_cpu_source(inst, {});
    CHECK_THAT(source, Catch::Contains("prism_scratch("));
    CHECK_THAT(source, !Catch::Contains("static float* const wide"));
  }
}

TEST_CASE("codegen: library matmuls call OpenBLAS, transposed operands read in place", "[codegen][library]") {
  const DimBindings dims = {{"n", 6}, {"d", 20}, {"m", 14}, {"b", 3}};
  CHECK(family_codegen_error(kVendorFamily, dims, {{"g1", 2}}) < kTol);
  sgraph::Instance inst = sgraph::instantiate(sgraph::parse(kVendorFamily), dims, {{"g1", 2}}, sgraph::TileBudget{1 << 20});
  const std::string source = generate_cpu_source(inst, {});
  // P: no transpose of X, W transposed with its row length as the leading dim; Q: both transposed.
  CHECK_THAT(source, Catch::Contains("cblas_sgemm(101, 111, 112, 6, 14, 20, 1.0f, t0, 20, t1, 20, 0.0f"));
  CHECK_THAT(source, Catch::Contains("cblas_sgemm(101, 112, 112, 6, 14, 20, 1.0f, t2, 6, t1, 20, 0.0f"));
  CHECK_THAT(source, Catch::Contains("for (long i0 = 0; i0 < 3L; ++i0)"));
}

// where(Y > 0, Y, 0.01 * Y) as the search writes it after a split matmul: a comparison, the
// select of the value it compared, the comparison's negation and a second select. GCC 12.2 at -O3
// vectorized the first select wrongly when it was spelled with ?: (docs/testing.md, "The host
// compiler's wrong code"); the search's leaky-ReLU families computed 0 for a third of Y.
TEST_CASE("codegen: a select after a comparison of the same value, as where() lowers, matches the evaluator", "[codegen][ops]") {
  // The combining kernel of a matmul split over p blocks: the partials summed, then the select.
  const std::string family = R"(input T1: f32[p, n, h]
input T2: f32[p, n, h]
kernel 0: custom grid=[g1]
  partials = load T1 map {grid: 2->g1, loop: -}
  small_partials = load T2 map {grid: 2->g1, loop: -}
  small = sum(small_partials, axis=0)
  zero = const(0)
  y = sum(partials, axis=0)
  positive = gt(y, zero)
  kept = mask(positive, y)
  negative = eq(positive, zero)
  scaled = mask(negative, small)
  o = add(kept, scaled)
  save O: f32 = o map {grid: 1->g1, loop: -}
output O
)";
  CHECK(family_codegen_error(family, {{"p", 1}, {"n", 4}, {"h", 32}}, {{"g1", 2}}) < 1e-6);
  CHECK(family_codegen_error(family, {{"p", 3}, {"n", 3}, {"h", 40}}, {{"g1", 1}}) < 1e-6);
}

TEST_CASE("codegen: a kernel below its grain runs on the calling thread, one above it on the threads", "[codegen][grain]") {
  const std::string parallel = "#pragma omp parallel for num_threads(threads)";
  // A decode step's RMSNorm and projection: 1 x 64 against 64 x 32 (about 2^12 multiply-adds
  // and loads) on one thread; 64 x 1024 against 1024 x 256 (2^24) on the threads.
  sgraph::Instance small = sgraph::instantiate(sgraph::parse(fam::kLlama), {{"n", 1}, {"d", 64}, {"m", 32}}, {{"g1", 2}, {"F1", 2}},
                                               sgraph::TileBudget{1 << 20});
  sgraph::Instance large = sgraph::instantiate(sgraph::parse(fam::kLlama), {{"n", 64}, {"d", 1024}, {"m", 256}}, {{"g1", 2}, {"F1", 4}},
                                               sgraph::TileBudget{1 << 20});
  const std::string serial = generate_cpu_source(small, {});
  CHECK_THAT(serial, !Catch::Contains(parallel));
  CHECK_THAT(serial, Catch::Contains("element operations: below the grain, one thread"));
  CHECK_THAT(generate_cpu_source(large, {}), Catch::Contains(parallel));
  CHECK_THAT(generate_cpu_source(small, every_loop_parallel()), Catch::Contains(parallel));
  // The work counted: each statement's elements, a matmul's times its depth, over loop and blocks.
  const backend::kir::Program program = backend::lower(small, backend::cpu_lowering());
  REQUIRE(program.kernels.size() == 1);
  const int64_t work = kernel_work(program.kernels[0].block);
  CHECK(work >= 1 * 32 * 64);  // the matmul's multiply-adds at least
  CHECK(work < kKernelGrain);
  // Below the grain, right with any thread count the caller passes.
  CHECK(codegen_error(small, compile_library(serial, compile_options())) < kTol);
}
