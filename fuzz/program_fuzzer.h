// The program fuzzer's loop (prism_fuzz_programs): mutated .prism text through the parser and
// checker (Workspace::open), and for what compiles, `show`, the reference interpreter at small
// bindings and, with `search`, a tiny search. Runs in-process: a crash is a crash of this process
// (the current case is always on disk first); a case that runs too long is a hang.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/mutator.h"

namespace prism {
class Workspace;
}

namespace prism::fuzz {

struct ProgramFuzzOptions {
  uint64_t programs = 10000;
  uint64_t seed = 1;
  uint64_t only = UINT64_MAX;  // run just this iteration (reproducing a finding)
  std::string replay;          // run just this file
  std::string artifacts = "fuzz-artifacts";
  bool search = false;
  double case_seconds = 30;  // a case still running after this long is cancelled; after twice this, a hang
  uint64_t progress_every = 2000;
};

struct ProgramFuzzStats {
  uint64_t cases = 0, parsed = 0, rejected = 0, empty = 0, programs = 0, runs_ok = 0, run_errors = 0, searches = 0;
  uint64_t position_violations = 0, unexpected_exceptions = 0;
};

class ProgramFuzzer {
 public:
  ProgramFuzzer(ProgramFuzzOptions options, std::vector<std::string> corpus);
  int run();  // exit code: 0 when nothing crashed or hung (violations are reported, not fatal)

 private:
  void fuzz_case(Workspace& ws, uint64_t i, const std::string& text);
  void note(const std::string& kind, uint64_t i, const std::string& text, const std::string& what);
  void watchdog();

  ProgramFuzzOptions options_;
  std::vector<std::string> corpus_;
  std::vector<std::string> tokens_;
  ProgramFuzzStats stats_;
  std::string current_path_;
  std::atomic<int64_t> case_started_ms_{-1};  // -1: no case running
  std::atomic<uint64_t> case_index_{0};
  std::atomic<bool> done_{false};
  std::atomic<void*> cancel_{nullptr};  // the running case's CancelToken
  int notes_printed_ = 0;
};

}  // namespace prism::fuzz
