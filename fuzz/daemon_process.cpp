#include "fuzz/daemon_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "fuzz/socket_client.h"

namespace prism::fuzz {

DaemonProcess::DaemonProcess(const DaemonPaths& paths) : paths_(paths) {
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    int log = ::open(paths.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (log >= 0) ::dup2(log, 1), ::dup2(log, 2);
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    if (::chdir(paths.work_dir.c_str()) != 0) ::_exit(127);
    ::setenv("PRISM_CACHE_DIR", paths.cache_dir.c_str(), 1);
    ::execl(paths.prismd.c_str(), paths.prismd.c_str(), "--socket", paths.socket.c_str(), "--state-dir", paths.state_dir.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
}

DaemonProcess::~DaemonProcess() {
  if (!status_) stop(std::chrono::seconds(10));
}

bool DaemonProcess::wait_ready(std::chrono::seconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (exited()) return false;
    if (Connection::open(paths_.socket)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::optional<int> DaemonProcess::exited() {
  if (status_) return status_;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
  return status_;
}

std::optional<int> DaemonProcess::stop(std::chrono::seconds timeout) {
  if (exited()) return status_;
  ::kill(pid_, SIGTERM);
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (exited()) return status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  status_ = status;
  return std::nullopt;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "wait status " + std::to_string(status);
}

}  // namespace prism::fuzz
