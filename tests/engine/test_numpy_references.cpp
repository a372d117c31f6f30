// The reference interpreter against NumPy in f64 on the data issue 45 found it wrong on: an f16
// RMSNorm and LayerNorm of activations whose 16-bit sum of squares overflows, and attention under
// a causal -inf mask. Every kernel prism reports is checked against this interpreter
// (test_codegen.cpp and test_cuda.cpp run the masked and wide cases through the code generators).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "interp_helpers.h"
#include "engine/io/npy.h"
#include "support/subprocess.h"

using namespace prism;
namespace fs = std::filesystem;

namespace {

// A Python that can import numpy (PATH may hold a pyenv python without it); "" when none.
std::string numpy_python() {
  for (const char* py : {"python3", "/usr/bin/python3"})
    if (std::system((std::string(py) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0) return py;
  return "";
}

// Writes the inputs and NumPy's f64 results (stored as f32) into `dir`.
const char* kNumpyScript = R"(import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
x = (rng.standard_normal((4, 4096)) * 4.5).astype(np.float16)
x[:, ::97] = np.float16(180.0)
np.save(d + '/x.npy', x)
x64 = x.astype(np.float64)
rms = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + 1e-6)
np.save(d + '/rms.npy', rms.astype(np.float32))
c = x64 - x64.mean(-1, keepdims=True)
ln = c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-5)
np.save(d + '/ln.npy', ln.astype(np.float32))
B, q, s, e = 2, 64, 64, 32
Q, K, V = (rng.uniform(-1, 1, (B, n, e)).astype(np.float32) for n in (q, s, s))
M = np.triu(np.full((q, s), -np.inf, dtype=np.float32), 1)
for name, t in (('q', Q), ('k', K), ('v', V), ('m', M)):
    np.save(d + '/' + name + '.npy', t)
S = Q.astype(np.float64) @ K.astype(np.float64).transpose(0, 2, 1) / np.sqrt(e) + M
P = np.exp(S - S.max(-1, keepdims=True))
np.save(d + '/attn.npy', ((P / P.sum(-1, keepdims=True)) @ V.astype(np.float64)).astype(np.float32))
)";

double max_relative(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape == want.shape);
  double worst = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    if (!std::isfinite(got.data[i])) return INFINITY;
    worst = std::max(worst, std::fabs(double(got.data[i]) - want.data[i]) / std::max(1.0, std::fabs(double(want.data[i]))));
  }
  return worst;
}

}  // namespace

TEST_CASE("numpy: f16 norms of wide activations and attention under a causal -inf mask match NumPy in f64", "[numpy][casts][masked]") {
  const std::string py = numpy_python();
  if (py.empty()) {
    WARN("numpy is not importable by python3; skipping the NumPy references");
    return;
  }
  test::TempDir dir;
  std::ofstream(dir.path() + "/refs.py") << kNumpyScript;
  REQUIRE(std::system((py + " " + dir.path() + "/refs.py " + dir.path()).c_str()) == 0);
  auto npy = [&](const char* name) { return read_npy(dir.path() + "/" + name + ".npy"); };

  const Tensor x = npy("x");
  const DimBindings rows{{"n", 4}, {"d", 4096}};
  // f16 results: within f16's rounding (2^-11 relative) of the f64 result.
  CHECK(max_relative(test::run1("X: f16[n, d]", "rms_norm(X, eps=1e-6)", rows, x), npy("rms")) < 1e-3);
  CHECK(max_relative(test::run1("X: f16[n, d]", "layer_norm(X, eps=1e-5)", rows, x), npy("ln")) < 1e-3);

  const char* causal = R"(program causal(Q: f32[B, q, e], K: f32[B, s, e], V: f32[B, s, e], M: f32[q, s]) {
  return matmul(softmax(matmul(Q, transpose(K, perm=[0, 2, 1])) / sqrt(e) + M), V)
}
)";
  const Tensor attn = test::run_text(causal, {{"B", 2}, {"q", 64}, {"s", 64}, {"e", 32}},
                                     {{"Q", npy("q")}, {"K", npy("k")}, {"V", npy("v")}, {"M", npy("m")}})
                          .at(0);
  CHECK(max_relative(attn, npy("attn")) < 1e-5);
}
