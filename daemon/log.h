// prismd's log: one line per event, to stderr or an append-only file. Thread-safe.
#pragma once
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

 private:
  std::mutex mutex_;
  std::FILE* file_ = nullptr;
};

}  // namespace prism::daemon
