// prismd's log: one line per event, to stderr or an append-only file. Thread-safe.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace prism::daemon {

class Logger {
 public:
  Logger() = default;
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // Sends later lines to `path` (appending); returns an error message, empty on success.
  std::string open_file(const std::string& path);
  void line(const std::string& text);
  // A line about a peer that has not authenticated (a TCP client before its token): anyone on
  // the machine can cause these, so they are rate-limited (docs/protocol.md "Security"): a burst
  // of kPeerBurst, then kPeerLinesPerSecond; the rest are counted, and the count is written
  // before the next line that is.
  void peer_line(const std::string& text);

  static constexpr double kPeerBurst = 50;
  static constexpr double kPeerLinesPerSecond = 2;

 private:
  void write_locked(const std::string& text);

  std::mutex mutex_;
  std::FILE* file_ = nullptr;
  double peer_allowance_ = kPeerBurst;
  std::chrono::steady_clock::time_point peer_refilled_ = std::chrono::steady_clock::now();
  uint64_t peer_dropped_ = 0;
};

}  // namespace prism::daemon
