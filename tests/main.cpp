// The single translation unit that compiles Catch2's main (the header is slow). Every test
// process, and every daemon it starts, shares one CPU description (docs/tuning.md, "Peaks"):
// measuring takes seconds, and ctest runs each test case in a process of its own.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

int main(int argc, char* argv[]) {
  ::setenv("PRISM_CPU_DESCRIPTION", PRISM_BIN_DIR "/../test-cache/cpu-target.txt", /*overwrite=*/0);
  return Catch::Session().run(argc, argv);
}
