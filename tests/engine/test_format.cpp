// The canonical layout of .prism text (textDocument/formatting).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/lang/format.h"
#include "engine/lang/op_signature.h"

using prism::format_source;

TEST_CASE("format lays a messy layer out canonically and keeps its comments", "[lang][format]") {
  const std::string messy =
      "# Llama's RMSNorm, then nn.Linear ([out, in] weight)\n"
      "program llama_proj(X :bf16[n,d],g:bf16[d],W:bf16[ m,d ]){ # header\n"
      "\n"
      "\n"
      "    Y=rms_norm(X,eps = 1e-6)*g # the gain\n"
      "  Z = - Y;  P = transpose(W, perm = [ 1,0 ])\n"
      "      # before the return\n"
      "  return matmul(Z,\n"
      "                P) @ ones\n"
      "\n"
      "}\n"
      "# the next one\n"
      "program scale(X: f32[n]) { return X * -2 / (n - 1) }\n"
      "\n\n\n";
  const std::string canonical =
      "# Llama's RMSNorm, then nn.Linear ([out, in] weight)\n"
      "program llama_proj(X: bf16[n, d], g: bf16[d], W: bf16[m, d]) {  # header\n"
      "  Y = rms_norm(X, eps=1e-6) * g  # the gain\n"
      "  Z = -Y\n"
      "  P = transpose(W, perm=[1, 0])\n"
      "  # before the return\n"
      "  return matmul(Z, P) @ ones\n"
      "}\n"
      "\n"
      "# the next one\n"
      "program scale(X: f32[n]) {\n"
      "  return X * -2 / (n - 1)\n"
      "}\n";
  const auto formatted = format_source(messy);
  REQUIRE(formatted);
  CHECK(*formatted == canonical);
  CHECK(format_source(canonical) == canonical);  // canonical text is a fixed point
}

TEST_CASE("format keeps trailing comments at their column when the code leaves room", "[lang][format]") {
  const std::string text =
      "program p(X: f32[n, d]) {\n"
      "  Y=X*2       # aligned\n"
      "  return Y+1  # comments\n"
      "}\n";
  CHECK(format_source(text) ==
        "program p(X: f32[n, d]) {\n"
        "  Y = X * 2   # aligned\n"
        "  return Y + 1  # comments\n"
        "}\n");
}

TEST_CASE("format keeps a statement with a comment inside as written", "[lang][format]") {
  const std::string text =
      "program p(X: f32[n, d], W: f32[d, d]) {\n"
      "  return matmul(X,  # activations\n"
      "                W)\n"
      "}\n";
  CHECK(format_source(text) == text);
}

TEST_CASE("format leaves text that does not parse alone", "[lang][format]") {
  CHECK_FALSE(format_source("program p(X: f32[n] {\n  return X\n}\n"));
  CHECK_FALSE(format_source("program p(X: f32[n]) {\n  return X $ 2\n}\n"));
  CHECK(format_source("") == "");
}

TEST_CASE("every bundled example formats to a fixed point that means the same", "[lang][format]") {
  // format_source itself refuses a layout whose tokens differ; here each result is stable too.
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(PRISM_SOURCE_DIR "/examples")) {
    if (entry.path().extension() != ".prism") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    INFO(entry.path());
    const auto once = format_source(text.str());
    REQUIRE(once);
    CHECK(format_source(*once) == once);
    ++files;
  }
  CHECK(files >= 7);
}
