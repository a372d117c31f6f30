#include <catch2/catch.hpp>

#include <chrono>
#include <random>

#include "engine/workspace/workspace.h"
#include "support/subprocess.h"

using namespace prism;

namespace {

std::vector<std::string> example_texts() {
  std::vector<std::string> out;
  for (const char* name : {"rms_linear", "rmsnorm_mlp", "gated_mlp", "attention", "qk_norm_attention", "lora", "gqa"})
    out.push_back(test::read_example(name));
  return out;
}

const char* kTokens[] = {"program", "return", "(", ")", "[", "]", "{", "}", ",", ";", "\n", "=", "+", "-", "*", "/", "@",
                         "axis=-1", "keepdims=false", "eps=1e-6", "perm=[0, 2, 1]", "split(", "reshape(", "concat(", "X", "W",
                         "n", "d", "1e309", "99999999999999999999", "f16", "bf16", "f32[", "#", "\xff", "\0", "matmul(", "sum("};

std::string mutate(std::string s, std::mt19937_64& rng) {
  int edits = 1 + int(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 6) {
      case 0:  // flip a byte
        if (!s.empty() && pos < s.size()) s[pos] = char(rng() & 0xFF);
        break;
      case 1:  // delete a run
        if (pos < s.size()) s.erase(pos, 1 + rng() % 16);
        break;
      case 2:  // insert random bytes
        for (int i = int(rng() % 8); i > 0; --i) s.insert(s.begin() + long(pos), char(rng() & 0xFF));
        break;
      case 3:  // insert a token
        s.insert(pos, kTokens[rng() % (sizeof kTokens / sizeof *kTokens)]);
        break;
      case 4:  // truncate
        s.resize(pos);
        break;
      case 5:  // duplicate a slice
        if (pos < s.size()) s.insert(pos, s.substr(pos, rng() % 64));
        break;
    }
  }
  return s;
}

}  // namespace

TEST_CASE("open never throws, hangs or crashes on mutated or random text", "[engine][fuzz]") {
  std::mt19937_64 rng(12345);
  std::vector<std::string> seeds = example_texts();
  std::string all;
  for (const auto& s : seeds) all += s;
  seeds.push_back(all);
  Workspace ws;
  int opened = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string text;
    if (iter % 4 == 0) {
      text.resize(rng() % 512);
      for (char& c : text) c = char(rng() & 0xFF);
    } else {
      text = mutate(seeds[rng() % seeds.size()], rng);
    }
    DocumentState st;
    REQUIRE_NOTHROW(st = ws.open("fuzz" + std::to_string(iter % 3) + ".prism", text, iter));
    for (const auto& d : st.diagnostics) {
      REQUIRE(d.range.begin.line >= 1);
      REQUIRE(d.range.begin.col >= 1);
      REQUIRE(!d.message.empty());
    }
    // Whatever compiled must also show and print without throwing.
    for (const auto& name : st.programs) REQUIRE_NOTHROW(ws.show(name));
    ++opened;
  }
  CHECK(opened == 4000);
}

TEST_CASE("huge programs compile in linear time", "[engine][fuzz]") {
  std::string text = "program big(X: f32[n]) {\n";
  for (int i = 0; i < 20000; ++i) {
    std::string prev = i ? std::string("V").append(std::to_string(i - 1)) : std::string("X");
    text.append("  V").append(std::to_string(i)).append(" = exp(").append(prev).append(" + X * 2)\n");
  }
  text += "  return V19999\n}\n";
  std::string bad = "program bad(X: f32[n]) {\n";
  for (int i = 0; i < 20000; ++i) bad.append("  V").append(std::to_string(i)).append(" = exp(Nope").append(std::to_string(i)).append(")\n");
  bad += "  return V0\n}\n";
  Workspace ws;
  auto start = std::chrono::steady_clock::now();
  DocumentState st = ws.open("big.prism", text + bad, 1);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(st.programs == std::vector<std::string>{"big"});
  CHECK(st.diagnostics.size() == 101);  // capped
  CHECK(seconds < 5);
}

TEST_CASE("pathological inputs are rejected quickly", "[engine][fuzz]") {
  Workspace ws;
  std::vector<std::string> texts = {
      std::string(200000, '('),
      "program p(X: f16[" + std::string(100000, '-') + "n]) { return X }",
      "program p(X: f16[n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n*n]) { return X }",
      "program p(X: f16[(a+b+c+e)*(a+b+c+e)*(a+b+c+e)*(a+b+c+e)*(a+b+c+e)*(a+b+c+e)*(a+b+c+e)*(a+b+c+e)*(a+b+c+e)*(a+b+c+e)*(a+b+c+e)]) { return X }",
      "program p(X: f16[4611686018427387904*4]) { return X }",
      "program p(X: f16[n]) { return X / (1/0) }",
      "program p(X: f16[n]) { return reshape(X, [n/(n-n)]) }",
      std::string(100000, '\n').append("program"),
      "program p(X: f16[n]) { return split(X, 2147483647) }",
      "program p(X: f16[n]) {\n  A, B = split(X, 1000000000)\n  return A\n}",
  };
  for (const auto& t : texts) {
    DocumentState st;
    REQUIRE_NOTHROW(st = ws.open("p.prism", t, 1));
    INFO(t.substr(0, 120));
    CHECK(!st.diagnostics.empty());
  }
}
