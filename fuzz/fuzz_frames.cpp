// prism_fuzz_frames: fuzzes prismd's framing and JSON-RPC layer over its Unix socket (fuzz/README.md).
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "fuzz/files.h"
#include "fuzz/frame_fuzzer.h"

namespace {

const char* kUsage =
    "usage: prism_fuzz_frames [--frames N] [--seed S] [--clients C] [--check-every K] [--liveness-timeout SEC]\n"
    "                         [--p-framing P] [--prismd PATH | --socket PATH] [--corpus DIR] [--artifacts DIR]\n"
    "                         [--keep-going] [--keep-temp] [--progress-every N] [--replay DIR]\n"
    "Sends N iterations of mutated frames to one prismd (started on a private socket, state directory and\n"
    "cache unless --socket names a running one) and checks every K iterations that a fresh connection gets\n"
    "answers to initialize and daemon/status. Exit code 0: no crash, no hang.\n";

std::string self_dir() { return std::filesystem::read_symlink("/proc/self/exe").parent_path().string(); }

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  std::cout << std::unitbuf;
  prism::fuzz::FrameFuzzOptions options;
  options.prismd = self_dir() + "/prismd";
  options.corpus_dir = std::string(PRISM_SOURCE_DIR) + "/fuzz/corpus/frames";
  std::string replay;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << arg << " needs a value\n" << kUsage;
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--frames") options.frames = std::stoull(value());
    else if (arg == "--seed") options.seed = std::stoull(value());
    else if (arg == "--clients") options.clients = std::stoi(value());
    else if (arg == "--check-every") options.check_every = std::max<uint64_t>(1, std::stoull(value()));
    else if (arg == "--liveness-timeout") options.liveness_seconds = std::stod(value());
    else if (arg == "--p-framing") options.p_framing = std::stod(value());
    else if (arg == "--prismd") options.prismd = value();
    else if (arg == "--socket") options.socket = value();
    else if (arg == "--corpus") options.corpus_dir = value();
    else if (arg == "--artifacts") options.artifacts = value();
    else if (arg == "--progress-every") options.progress_every = std::stoull(value());
    else if (arg == "--keep-going") options.keep_going = true;
    else if (arg == "--keep-temp") options.keep_temp = true;
    else if (arg == "--replay") replay = value();
    else {
      std::cerr << (arg == "--help" ? "" : "unknown argument " + arg + "\n") << kUsage;
      return arg == "--help" ? 0 : 2;
    }
  }
  auto corpus = prism::fuzz::read_corpus(options.corpus_dir, ".json");
  if (corpus.empty()) {
    std::cerr << "no *.json in " << options.corpus_dir << "\n";
    return 2;
  }
  std::cout << "prism_fuzz_frames: seed " << options.seed << ", " << options.frames << " iterations, " << options.clients << " clients, "
            << corpus.size() << " corpus messages\n";
  prism::fuzz::FrameFuzzer fuzzer(options, std::move(corpus));
  return replay.empty() ? fuzzer.run() : fuzzer.replay(replay);
}
