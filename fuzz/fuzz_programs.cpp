// prism_fuzz_programs: fuzzes the .prism parser, checker and reference interpreter in-process
// (fuzz/README.md).
#include <cstdlib>
#include <iostream>
#include <string>

#include "fuzz/files.h"
#include "fuzz/program_fuzzer.h"

namespace {

const char* kUsage =
    "usage: prism_fuzz_programs [--programs N] [--seed S] [--search] [--case-timeout SEC] [--corpus DIR]... [--artifacts DIR]\n"
    "                           [--only I | --replay FILE] [--progress-every N]\n"
    "Mutates the corpus (default: fuzz/corpus/programs and examples/) and runs every case through the parser and\n"
    "checker, show, the reference interpreter at small bindings and (--search) a tiny search. A crash or a hang\n"
    "is a finding (the case is on disk first); exit code 0 otherwise. Rejections without a line:column are\n"
    "reported as position violations.\n";

}  // namespace

int main(int argc, char** argv) {
  prism::fuzz::ProgramFuzzOptions options;
  std::vector<std::string> corpus_dirs;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << arg << " needs a value\n" << kUsage;
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--programs") options.programs = std::stoull(value());
    else if (arg == "--seed") options.seed = std::stoull(value());
    else if (arg == "--search") options.search = true;
    else if (arg == "--case-timeout") options.case_seconds = std::stod(value());
    else if (arg == "--corpus") corpus_dirs.push_back(value());
    else if (arg == "--artifacts") options.artifacts = value();
    else if (arg == "--only") options.only = std::stoull(value());
    else if (arg == "--replay") options.replay = value();
    else if (arg == "--progress-every") options.progress_every = std::stoull(value());
    else {
      std::cerr << (arg == "--help" ? "" : "unknown argument " + arg + "\n") << kUsage;
      return arg == "--help" ? 0 : 2;
    }
  }
  if (corpus_dirs.empty())
    corpus_dirs = {std::string(PRISM_SOURCE_DIR) + "/fuzz/corpus/programs", std::string(PRISM_SOURCE_DIR) + "/examples"};
  std::vector<std::string> corpus;
  for (const auto& dir : corpus_dirs)
    for (auto& text : prism::fuzz::read_corpus(dir, ".prism")) corpus.push_back(std::move(text));
  if (corpus.empty()) {
    std::cerr << "no *.prism in the corpus directories\n";
    return 2;
  }
  std::cout << "prism_fuzz_programs: seed " << options.seed << ", " << options.programs << " programs, " << corpus.size()
            << " corpus programs" << (options.search ? ", with search" : "") << std::endl;
  prism::fuzz::ProgramFuzzer fuzzer(options, std::move(corpus));
  return fuzzer.run();
}
