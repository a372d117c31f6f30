// Exported kernels link into one program: each export's C ABI is named after its program and
// sizes (engine/backend/cpu/cpu_backend.cpp, export_source), and each computes what the reference
// interpreter computes.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/io/npy.h"
#include "repl/repl_fixture.h"
#include "support/subprocess.h"

using prism::test::ReplFixture;

namespace {

// The inputs both sides use: a deterministic pattern with mixed signs, input `k` of `count` values.
std::vector<float> pattern(int k, int64_t count) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[size_t(i)] = float(std::sin(0.37 * double(i) + k) * 0.5);
  return v;
}

// A program calling three exports: llama_rmsnorm_proj at two sizes and gelu_linear, printing
// each output's values on a line.
// The pattern and a printer, in the programs the tests compile.
const char* kHelpers = R"(#include <cmath>
#include <cstdio>
#include <vector>
static std::vector<float> pattern(int k, long count) {
  std::vector<float> v(count);
  for (long i = 0; i < count; ++i) v[i] = float(std::sin(0.37 * double(i) + k) * 0.5);
  return v;
}
static void print(const std::vector<float>& v) {
  for (float x : v) std::printf("%.9g ", x);
  std::printf("\n");
}
)";

const char* kMain = R"(#include "a.h"
#include "b.h"
#include "c.h"
int main() {
  for (long n : {4L, 2L}) {  // llama_rmsnorm_proj(X[n, 64], g[64], W[32, 64]) -> [n, 32]
    std::vector<float> X = pattern(0, n * 64), g = pattern(1, 64), W = pattern(2, 32 * 64), Y(n * 32);
    const void* in[] = {X.data(), g.data(), W.data()};
    void* out[] = {Y.data()};
    int rc = n == 4 ? prism_llama_rmsnorm_proj_d64_m32_n4(in, out, 1) : prism_llama_rmsnorm_proj_d64_m32_n2(in, out, 1);
    if (rc != 0) return 1;
    print(Y);
  }
  // gelu_linear(X[4, 64], W[32, 64], b[32]) -> [4, 32]
  std::vector<float> X = pattern(0, 4 * 64), W = pattern(1, 32 * 64), b = pattern(2, 32), Y(4 * 32);
  const void* in[] = {X.data(), W.data(), b.data()};
  void* out[] = {Y.data()};
  if (prism_gelu_linear_d64_h32_n4(in, out, 1) != 0) return std::puts(prism_gelu_linear_d64_h32_n4_error()), 1;
  print(Y);
  return 0;
}
)";

std::vector<float> numbers(const std::string& line) {
  std::istringstream in(line);
  std::vector<float> v;
  for (float x; in >> x;) v.push_back(x);
  return v;
}

// The reference interpreter's output of `program` at `dims` on the pattern inputs `inputs` (name, shape).
std::vector<float> reference(const ReplFixture& f, const std::string& program, const std::string& dims,
                             const std::vector<std::pair<std::string, std::vector<int64_t>>>& inputs) {
  std::string command = "run " + program + " " + dims;
  for (size_t k = 0; k < inputs.size(); ++k) {
    prism::Tensor t;
    t.shape = inputs[k].second;
    t.data = pattern(int(k), prism::checked_element_count(t.shape));
    const std::string path = f.dir() / (program + inputs[k].first + ".npy");
    prism::write_npy(path, t);
    command += " --in " + inputs[k].first + "=" + path;
  }
  const std::string out = f.dir() / (program + "_out.npy");
  auto r = f.prism({"-c", "open " + prism::test::source("examples/layers/" + program + ".prism") + "; " + command + " --out " + out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return prism::read_npy(out).data;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  float scale = 0;
  for (float w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(std::fabs(got[i] - want[i]) <= 1e-3f * std::fabs(want[i]) + 1e-4f * scale);
  }
}

// What `main` (after kHelpers) prints, linked with the exports `sources` in the fixture's dir.
std::string linked_output(const ReplFixture& f, const char* main, const std::vector<std::string>& sources, const std::string& opt) {
  std::ofstream(f.dir() / "main.cpp") << kHelpers << main;
  const std::string exe = f.dir() / "main";
  std::vector<std::string> cc_args = {"c++", "-std=c++17", opt, "-march=native", "-fopenmp", "-I", f.dir().path()};
  for (const std::string& source : sources) cc_args.push_back(f.dir() / source);
  for (const std::string& arg : {std::string(f.dir() / "main.cpp"), std::string("-o"), exe, std::string("-lopenblas")}) cc_args.push_back(arg);
  auto cc = prism::test::run_process(cc_args);
  INFO(cc.err);
  REQUIRE(cc.exit_code == 0);
  auto run = prism::test::run_process({exe});
  INFO(run.out);
  REQUIRE(run.exit_code == 0);
  return run.out;
}

}  // namespace

TEST_CASE("three exported kernels, one program at two sizes, link into one program and give the reference's values",
          "[repl][e2e][export]") {
  ReplFixture f;
  const std::string llama = prism::test::source("examples/layers/llama_rmsnorm_proj.prism");
  const std::string gelu = prism::test::source("examples/layers/gelu_linear.prism");
  auto r = f.prism({"-c", "open " + llama + "; open " + gelu + "; export llama_rmsnorm_proj " + (f.dir() / "a.cpp") +
                              " n=4 d=64 m=32; export llama_rmsnorm_proj " + (f.dir() / "b.cpp") +
                              " n=2 d=64 m=32; export gelu_linear " + (f.dir() / "c.cpp") + " n=4 d=64 h=32"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream header(f.dir() / "a.h");
  std::stringstream text;
  text << header.rdbuf();
  CHECK_THAT(text.str(), Catch::Contains("int prism_llama_rmsnorm_proj_d64_m32_n4(const void* const* inputs") &&
                             Catch::Contains("inputs:  X f32(4, 64), g f32(64,), W f32(32, 64)"));
  std::istringstream lines(linked_output(f, kMain, {"a.cpp", "b.cpp", "c.cpp"}, "-O2"));
  std::string line;
  for (int64_t n : {4, 2}) {
    REQUIRE(std::getline(lines, line));
    check_close(numbers(line), reference(f, "llama_rmsnorm_proj", "n=" + std::to_string(n) + " d=64 m=32",
                                         {{"X", {n, 64}}, {"g", {64}}, {"W", {32, 64}}}));
  }
  REQUIRE(std::getline(lines, line));
  check_close(numbers(line), reference(f, "gelu_linear", "n=4 d=64 h=32", {{"X", {4, 64}}, {"W", {32, 64}}, {"b", {32}}}));
}

namespace {

// A program calling the exports of two whole decoder blocks (kernel cuts: docs/search.md), each
// output's values on a line.
const char* kBlocksMain = R"(#include "attn.h"
#include "mlp.h"
int main() {
  {  // llama_attention(X[2, 32], g[32], Wq[16, 32], K[2, 16, 8], V[2, 16, 8], M[2, 16], Wo[32, 16]) -> [2, 32]
    std::vector<float> X = pattern(0, 64), g = pattern(1, 32), Wq = pattern(2, 512), K = pattern(3, 256), V = pattern(4, 256),
                       M = pattern(5, 32), Wo = pattern(6, 512), Y(64);
    const void* in[] = {X.data(), g.data(), Wq.data(), K.data(), V.data(), M.data(), Wo.data()};
    void* out[] = {Y.data()};
    if (prism_llama_attention_d32_e8_h2_n2_s16(in, out, 2) != 0) return std::puts(prism_llama_attention_d32_e8_h2_n2_s16_error()), 1;
    print(Y);
  }
  {  // llama_mlp_block(X[4, 32], g[32], Wg[64, 32], Wu[64, 32], Wd[32, 64]) -> [4, 32]
    std::vector<float> X = pattern(0, 128), g = pattern(1, 32), Wg = pattern(2, 2048), Wu = pattern(3, 2048), Wd = pattern(4, 2048), Y(128);
    const void* in[] = {X.data(), g.data(), Wg.data(), Wu.data(), Wd.data()};
    void* out[] = {Y.data()};
    if (prism_llama_mlp_block_d32_f64_n4(in, out, 2) != 0) return std::puts(prism_llama_mlp_block_d32_f64_n4_error()), 1;
    print(Y);
  }
  return 0;
}
)";

}  // namespace

TEST_CASE("a decoder's attention and MLP blocks, each cut into pieces, export, link and give the reference's values",
          "[repl][e2e][export][kernel-cut]") {
  ReplFixture f;
  const std::string attention = prism::test::source("examples/layers/llama_attention.prism");
  const std::string mlp = prism::test::source("examples/layers/llama_mlp_block.prism");
  auto r = f.prism({"-c", "open " + attention + "; open " + mlp + "; export llama_attention " + (f.dir() / "attn.cpp") +
                              " n=2 d=32 h=2 e=8 s=16; export llama_mlp_block " + (f.dir() / "mlp.cpp") + " n=4 d=32 f=64"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::istringstream lines(linked_output(f, kBlocksMain, {"attn.cpp", "mlp.cpp"}, "-O1"));
  std::string line;
  REQUIRE(std::getline(lines, line));
  check_close(numbers(line), reference(f, "llama_attention", "n=2 d=32 h=2 e=8 s=16",
                                       {{"X", {2, 32}}, {"g", {32}}, {"Wq", {16, 32}}, {"K", {2, 16, 8}}, {"V", {2, 16, 8}}, {"M", {2, 16}},
                                        {"Wo", {32, 16}}}));
  REQUIRE(std::getline(lines, line));
  check_close(numbers(line), reference(f, "llama_mlp_block", "n=4 d=32 f=64",
                                       {{"X", {4, 32}}, {"g", {32}}, {"Wg", {64, 32}}, {"Wu", {64, 32}}, {"Wd", {32, 64}}}));
}
