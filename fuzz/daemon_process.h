// The prismd under fuzz: spawned on a private socket, state directory and kernel cache, its log in
// a file; always stopped (SIGTERM, then SIGKILL) when this object goes.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

namespace prism::fuzz {

struct DaemonPaths {
  std::string prismd;    // the executable
  std::string work_dir;  // its working directory (relative paths resolve here)
  std::string socket;
  std::string state_dir;
  std::string cache_dir;  // PRISM_CACHE_DIR
  std::string log_file;   // stdout and stderr
};

class DaemonProcess {
 public:
  explicit DaemonProcess(const DaemonPaths& paths);
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // Waits until the socket accepts a connection; false when prismd exited or `timeout` passed.
  bool wait_ready(std::chrono::seconds timeout);
  // The wait status when prismd has exited (non-blocking).
  std::optional<int> exited();
  // SIGTERM, then the wait status (SIGKILL after `timeout`: nullopt).
  std::optional<int> stop(std::chrono::seconds timeout);
  pid_t pid() const { return pid_; }

 private:
  DaemonPaths paths_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// "exit code 0", "killed by signal 6 (Aborted)".
std::string describe_wait_status(int status);

}  // namespace prism::fuzz
