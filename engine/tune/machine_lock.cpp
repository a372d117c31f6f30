#include "engine/tune/machine_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>

#include "engine/util/user_dirs.h"

namespace prism::tune {

std::string MachineLock::default_path() {
  const std::string dir = user_runtime_dir();
  return dir.empty() ? "" : dir + "/tune.lock";
}

namespace {

std::string read_record(int fd) {
  char buf[512];
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string text = n > 0 ? std::string(buf, size_t(n)) : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text.empty() ? "another tune" : text;
}

}  // namespace

MachineLock::MachineLock(const std::string& path, const std::string& what, const CancelToken* cancel,
                         const std::function<void(const std::string& holder)>& waiting) {
  if (path.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      ::close(fd);
      return;
    }
    if (!waited_ && waiting) waiting(read_record(fd));
    waited_ = true;
    if (cancel && cancel->cancelled()) {
      ::close(fd);
      cancel->check();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  fd_ = fd;
  const std::string record = what + "\n";
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, record.data(), record.size(), 0);
}

MachineLock::~MachineLock() {
  if (fd_ < 0) return;
  (void)!::ftruncate(fd_, 0);
  ::close(fd_);  // releases the flock
}

}  // namespace prism::tune
