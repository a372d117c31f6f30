// The fuzzers' liveness check: a fresh connection must get correct answers to `initialize` and
// `daemon/status` within a deadline. It never sends shutdown, exit or daemon/stop.
#pragma once
#include <chrono>
#include <optional>
#include <string>

namespace prism::fuzz {

struct Liveness {
  bool ok = false;
  std::string why;  // what went wrong, when not ok
  double seconds = 0;
};

// `pid`: the daemon's process id as daemon/status must report it (nullopt: not checked).
Liveness check_liveness(const std::string& socket, std::chrono::milliseconds deadline, std::optional<long> pid);

}  // namespace prism::fuzz
