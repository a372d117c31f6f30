#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/backend/cpu/abi.h"
#include "engine/backend/cpu/compiler.h"
#include "engine/error.h"
#include "engine/util/private_files.h"
#include "engine/util/sealed_file.h"
#include "support/scoped_env.h"
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

// A library another user would plant: its constructor leaves `marker` behind when it is loaded.
std::string planted_library(const std::string& marker, const std::string& scratch) {
  CompileOptions options;
  options.cache_dir = scratch;
  const std::string source = std::string(kDouble) + "#include <cstdio>\n__attribute__((constructor)) static void planted() {\n" +
                             "  if (FILE* f = std::fopen(\"" + marker + "\", \"w\")) std::fclose(f);\n}\n";
  FileContents bytes = read_regular_file(compile_library(source, options).path, size_t(1) << 30);
  REQUIRE(bytes.bytes);
  return *bytes.bytes;
}

// Puts `bytes` at `path` with a checksum that matches: what anyone who can write the directory can do.
void plant(const std::string& path, const std::string& bytes) {
  REQUIRE(write_file_atomically(path, bytes).empty());
  REQUIRE(write_seal(path, bytes).empty());
}

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
  const void* ins[] = {x};
  void* outs[] = {y};
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

TEST_CASE("compiler: a truncated or swapped cached object is found, never loaded, and rebuilt", "[backend][compiler][cache]") {
  test::TempDir dir;
  CompileOptions options;
  options.cache_dir = dir.path();
  CompiledLibrary first = compile_library(kDouble, options);
  const auto size = std::filesystem::file_size(first.path);

  // A kill -9 mid-write by an old prism, or a full disk: half an object.
  std::filesystem::resize_file(first.path, size / 2);
  CHECK_THROWS_WITH(LoadedLibrary(first.path), Catch::Contains("does not match its checksum"));
  CompiledLibrary rebuilt = compile_library(kDouble, options);
  CHECK_FALSE(rebuilt.cached);
  CHECK(std::filesystem::file_size(rebuilt.path) == size);
  CHECK_NOTHROW(LoadedLibrary(rebuilt.path));

  // Another object put in its place: refused as well.
  options.flags.push_back("-DVARIANT=2");
  CompiledLibrary other = compile_library(kDouble, options);
  std::filesystem::copy_file(other.path, rebuilt.path, std::filesystem::copy_options::overwrite_existing);
  CHECK_THROWS_WITH(LoadedLibrary(rebuilt.path), Catch::Contains("does not match its checksum"));
}

TEST_CASE("compiler: a compiler that exits 0 on garbage leaves nothing; an entry that does not load is rebuilt", "[backend][compiler][cache]") {
  // Issue 61, 9: a compiler wrapper that exited 0 but wrote garbage left a sealed .so that failed
  // every later tune ("file too short"), even after the compiler was fixed.
  test::TempDir dir;
  const std::string fake = dir / "fake-cxx";
  {
    std::ofstream script(fake);
    script << "#!/bin/sh\n# writes garbage where -o points and exits 0\nwhile [ $# -gt 1 ]; do\n"
              "  if [ \"$1\" = -o ]; then echo garbage > \"$2\"; fi\n  shift\ndone\nexit 0\n";
  }
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  CompileOptions options;
  options.cache_dir = dir / "kernels";
  options.compiler = fake;
  CHECK_THROWS_WITH(compile_library(kDouble, options), Catch::Contains("exited 0 but wrote no shared object"));
  for (const auto& entry : std::filesystem::directory_iterator(options.cache_dir))
    FAIL_CHECK("left in the cache: " << entry.path().filename().string());

  // An entry that passes its checksum yet does not load (an older prism stored it): the load
  // fails once, removes it, and the next compile builds it anew.
  options.compiler.clear();
  CompiledLibrary good = compile_library(kDouble, options);
  plant(good.path, "garbage\n");
  CHECK_THROWS_WITH(LoadedLibrary(good.path), Catch::Contains("cannot load"));
  CHECK_FALSE(std::filesystem::exists(good.path));
  CHECK_FALSE(std::filesystem::exists(good.path + ".sha256"));
  CompiledLibrary rebuilt = compile_library(kDouble, options);
  CHECK_FALSE(rebuilt.cached);
  CHECK_NOTHROW(LoadedLibrary(rebuilt.path));

  // A sealed entry that is no shared object is rebuilt by the compile itself, never served.
  plant(rebuilt.path, "garbage\n");
  CHECK_FALSE(compile_library(kDouble, options).cached);
  CHECK_NOTHROW(LoadedLibrary(rebuilt.path));
}

TEST_CASE("compiler: a kernel cache others can write to is refused", "[backend][compiler][cache]") {
  test::TempDir dir;
  CompileOptions options;
  options.cache_dir = dir / "kernels";
  std::filesystem::create_directory(options.cache_dir);
  std::filesystem::permissions(options.cache_dir, std::filesystem::perms::all);  // 0777
  CHECK_THROWS_WITH(compile_library(kDouble, options), (Catch::Contains("the kernel cache is unsafe") &&
                                                            Catch::Contains("writable by other users")));
  std::filesystem::permissions(options.cache_dir, std::filesystem::perms::owner_all);
  CHECK_FALSE(compile_library(kDouble, options).cached);
}

TEST_CASE("compiler: a kernel is never loaded from a cache another user could have written, checksum or not", "[backend][compiler][cache][security]") {
  // Issue 46, 1: with XDG_CACHE_HOME in a directory another user owns, they moved prism/ aside,
  // made prism/kernels world-writable and put their own KEY.so there with its SHA-256 beside it:
  // prism-runner loaded it by path and ran their constructor. Now every directory from the cache
  // root down is checked before each load (and each compile), and the library is read and loaded
  // through the checked directory's descriptor.
  test::TempDir dir;
  test::ScopedEnv cache_root("PRISM_CACHE_DIR", dir / "prism");
  const std::string kernels = dir / "prism/kernels", marker = dir / "constructor-ran";
  const CompiledLibrary ours = compile_library(kDouble);  // the default cache, under PRISM_CACHE_DIR
  REQUIRE(ours.path == kernels + "/" + ours.key + ".so");
  CHECK_NOTHROW(LoadedLibrary(ours.path));
  const std::string theirs = planted_library(marker, dir / "scratch");

  SECTION("prism/kernels recreated world-writable") {
    std::filesystem::rename(kernels, dir / "prism/kernels.old");
    ::mkdir(kernels.c_str(), 0777);
    ::chmod(kernels.c_str(), 0777);
    plant(ours.path, theirs);
    CHECK_THROWS_WITH(LoadedLibrary(ours.path), Catch::Contains("writable by other users"));
    CHECK_THROWS_WITH(compile_library(kDouble), Catch::Contains("the kernel cache is unsafe"));
  }
  SECTION("a cache root others may write, whatever the mode of kernels/") {
    plant(ours.path, theirs);  // as if swapped in through the open root
    ::chmod((dir / "prism").c_str(), 0777);
    CHECK_THROWS_WITH(LoadedLibrary(ours.path), Catch::Contains(dir / "prism is writable by other users"));
    CHECK_THROWS_WITH(compile_library(kDouble), Catch::Contains(dir / "prism is writable by other users"));
  }
  SECTION("prism/kernels owned by another user") {
    if (::geteuid() != 0) {
      WARN("skipped: needs root to chown to a second user");
      return;
    }
    plant(ours.path, theirs);
    REQUIRE(::chown(kernels.c_str(), 65534, 65534) == 0);
    CHECK_THROWS_WITH(LoadedLibrary(ours.path), Catch::Contains("belongs to another user"));
  }
  CHECK_FALSE(std::filesystem::exists(marker));
}
