// A prismd child process for end-to-end tests: spawned with pipes, its stderr collected, and
// always reaped (SIGTERM, then SIGKILL) so no test leaves a daemon behind, even when it fails.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/subprocess.h"

namespace prism::test {

class Prismd {
 public:
  // Runs PRISM_BIN_DIR/prismd with `args`. With `stdio`, stdin/stdout are pipes for a Client.
  // Unless `args` name a --state-dir, the daemon keeps its documents in a private one.
  explicit Prismd(std::vector<std::string> args, bool stdio = false);
  ~Prismd();
  Prismd(const Prismd&) = delete;
  Prismd& operator=(const Prismd&) = delete;

  // Waits for the "prismd: listening on ..." line and returns it; nullopt when prismd exited
  // or the timeout passed first.
  std::optional<std::string> wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // The exit code, or nullopt when it is still running after `timeout`.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  void signal(int sig);
  std::string stderr_text();
  pid_t pid() const { return pid_; }

  // The client's ends of the stdio pipes (ownership passes to whoever takes them).
  int take_stdout_read();
  int take_stdin_write();

 private:
  TempDir state_dir_;  // never the user's real state directory
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  int stdin_write_ = -1;
  int stdout_read_ = -1;
  int stderr_read_ = -1;
  std::thread stderr_thread_;
  std::mutex mutex_;
  std::string stderr_;
};

// Starts prismd with `env` set in its environment (and unset again in ours once it runs).
std::unique_ptr<Prismd> start_prismd_with(const std::map<std::string, std::string>& env,
                                          const std::vector<std::string>& args);

// The pids of the processes whose parent is `pid` (from /proc).
std::vector<pid_t> child_pids(pid_t pid);

}  // namespace prism::test
