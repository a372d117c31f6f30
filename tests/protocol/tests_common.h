// Program texts and paths shared by the protocol tests.
#pragma once
#include <string>

namespace prism::test {

// The example program of the repository; the tests open it by path.
inline const std::string kExamplePath = PRISM_SOURCE_DIR "/examples/rms_linear.prism";

inline const std::string kRmsLinear =
    "program rms_linear(X: f16[n, d], W: f16[d, d]) {\n"
    "  Y = rms_norm(X)\n"
    "  return matmul(Y, W)\n"
    "}\n";

// Type-checks nowhere: `bad_op` is no op of the language. Line 2 (1-based), columns 7..13.
inline const std::string kBroken =
    "program broken(X: f16[n, d]) {\n"
    "  Y = bad_op(X)\n"
    "  return Y\n"
    "}\n";

}  // namespace prism::test
