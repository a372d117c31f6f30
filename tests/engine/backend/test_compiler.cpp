#include <catch2/catch.hpp>

#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/error.h"
#include "support/subprocess.h"

using namespace prism;
using namespace prism::backend::cpu;

namespace {

const char* kDouble = R"(
extern "C" int prism_entry(const float* const* in, float* const* out, int) {
  for (int i = 0; i < 4; ++i) out[0][i] = 2 * in[0][i];
  return 0;
}
extern "C" const char* prism_error() { return ""; }
)";

}  // namespace

TEST_CASE("compiler: a source compiles once, loads and runs; the second time comes from the cache", "[backend][compiler]") {
  test::TempDir dir;
  CompileOptions options;
  options.cache_dir = dir.path();
  CompiledLibrary first = compile_library(kDouble, options);
  CHECK_FALSE(first.cached);
  CHECK(first.compile_s > 0);
  CompiledLibrary again = compile_library(kDouble, options);
  CHECK(again.cached);
  CHECK(again.path == first.path);

  LoadedLibrary lib(first.path);
  float x[4] = {1, 2, 3, -4}, y[4] = {};
  const float* ins[] = {x};
  float* outs[] = {y};
  REQUIRE(lib.function<EntryFn>(kEntrySymbol)(ins, outs, 1) == 0);
  CHECK(y[3] == -8);
  CHECK_THROWS_WITH(lib.symbol("nope"), Catch::Contains("'nope' is not defined"));

  // Other flags: another object.
  options.flags.push_back("-DVARIANT=1");
  CHECK(compile_library(kDouble, options).path != first.path);
}

TEST_CASE("compiler: a broken source fails with the compiler's message; the batch reports per source", "[backend][compiler]") {
  test::TempDir dir;
  CompileOptions options;
  options.cache_dir = dir.path();
  try {
    compile_library("int f( { return 0; }", options);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == Error::Kind::Failed);
    CHECK_THAT(e.what(), Catch::Contains("failed (exit"));
    CHECK_THAT(e.what(), Catch::Contains("error"));
  }
  std::vector<std::string> errors;
  auto results = compile_libraries({kDouble, "syntax error here"}, options, 2, &errors);
  CHECK_FALSE(results[0].path.empty());
  CHECK(errors[0].empty());
  CHECK(results[1].path.empty());
  CHECK_FALSE(errors[1].empty());
}
