#include "daemon/log.h"

#include <cerrno>
#include <cstring>
#include <ctime>

namespace prism::daemon {

Logger::~Logger() {
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
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local);
  std::lock_guard lock(mutex_);
  std::FILE* out = file_ ? file_ : stderr;
  std::fprintf(out, "prismd %s %s\n", stamp, text.c_str());
  std::fflush(out);
}

}  // namespace prism::daemon
