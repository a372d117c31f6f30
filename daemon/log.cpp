#include "daemon/log.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace prism::daemon {

Logger::~Logger() {
  std::lock_guard lock(mutex_);
  if (peer_dropped_ > 0) write_locked("stopped logging");  // says how many were left out
  if (file_) std::fclose(file_);
}

std::string Logger::open_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "ae");
  if (!f) return "cannot open log file " + path + ": " + std::strerror(errno);
  std::lock_guard lock(mutex_);
  if (file_) std::fclose(file_);
  file_ = f;
  return {};
}

void Logger::line(const std::string& text) {
  std::lock_guard lock(mutex_);
  write_locked(text);
}

void Logger::peer_line(const std::string& text) {
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - peer_refilled_).count();
  peer_allowance_ = std::min(kPeerBurst, peer_allowance_ + seconds * kPeerLinesPerSecond);
  peer_refilled_ = now;
  if (peer_allowance_ < 1) {
    ++peer_dropped_;
    return;
  }
  peer_allowance_ -= 1;
  write_locked(text);
}

void Logger::write_locked(const std::string& text) {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local);
  std::FILE* out = file_ ? file_ : stderr;
  if (peer_dropped_ > 0) {
    std::fprintf(out, "prismd %s left out %llu line(s) about peers without the token (a flood: at most %g a second)\n", stamp,
                 static_cast<unsigned long long>(peer_dropped_), kPeerLinesPerSecond);
    peer_dropped_ = 0;
  }
  std::fprintf(out, "prismd %s %s\n", stamp, text.c_str());
  std::fflush(out);
}

}  // namespace prism::daemon
