// The frame fuzzer's loop (prism_fuzz_frames): mutated JSON-RPC messages in mutated LSP frames,
// sent over several connections to one prismd, with liveness checks; on a crash or hang it prints
// the seed, the iteration and the last frames sent, and saves them under the artifacts directory.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/daemon_process.h"
#include "fuzz/mutator.h"
#include "fuzz/socket_client.h"

namespace prism::fuzz {

struct FrameFuzzOptions {
  std::string prismd;  // spawn this prismd (unless `socket` names a running one)
  std::string socket;  // connect to a running daemon instead
  std::string corpus_dir;
  std::string artifacts = "fuzz-artifacts";
  uint64_t frames = 100000;  // iterations; each sends one or more mutated frames
  uint64_t seed = 1;
  int clients = 4;
  uint64_t check_every = 500;  // liveness check every this many iterations
  double liveness_seconds = 10;
  double stall_seconds = 10;  // a write the daemon does not take for this long is a stall
  double p_framing = 0.2;     // how often a frame's header is mutated
  bool keep_going = false;    // after a crash or hang, restart the daemon and go on
  bool keep_temp = false;
  uint64_t progress_every = 10000;
};

struct FrameFuzzStats {
  uint64_t iterations = 0, frames = 0, mutated = 0, writes = 0, bytes = 0, replies = 0, connections = 0;
  uint64_t results = 0, errors = 0, internal_errors = 0, notifications = 0;
  std::vector<std::string> internal;  // InternalError answers (a bug in prismd, says docs/protocol.md)
  uint64_t closed_by_daemon = 0, disconnects = 0, stalls = 0, slow_iterations = 0, liveness_checks = 0, crashes = 0, hangs = 0;
  double slowest_liveness = 0;
};

// One iteration's bytes, kept to reproduce a finding.
struct SentRecord {
  uint64_t iteration = 0;
  int client = 0;
  bool fresh = false;  // sent on a new connection
  std::string bytes;
  std::string what;
};

class FrameFuzzer {
 public:
  FrameFuzzer(FrameFuzzOptions options, std::vector<std::string> corpus);
  ~FrameFuzzer();
  int run();                           // exit code: 0 when nothing was found
  int replay(const std::string& dir);  // sends a saved finding's bytes to a fresh daemon

 private:
  bool start_daemon();
  void iteration(uint64_t i);
  void send(int client, const SendPlan& plan, SentRecord& record);
  void retire(int client);
  bool check(uint64_t i, bool liveness);  // false after a crash or hang
  void report(uint64_t i, const std::string& kind, const std::string& why);
  std::string scan_log_for_sanitizers();

  FrameFuzzOptions options_;
  std::vector<std::string> corpus_;
  std::string temp_dir_, socket_;
  DaemonPaths paths_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::vector<std::optional<Connection>> clients_;
  std::deque<SentRecord> history_;
  FrameFuzzStats stats_;
  int restarts_ = 0;
  bool stalled_ = false;  // a write stalled: check liveness at once
};

void print_stats(const FrameFuzzStats& stats, double seconds);

}  // namespace prism::fuzz
