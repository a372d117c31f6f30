#include "prismd_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

extern char** environ;

namespace prism::test {

namespace {
void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}
}  // namespace

Prismd::Prismd(std::vector<std::string> args, bool stdio) {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  // O_CLOEXEC: other daemons spawned by concurrent tests must not inherit these pipes.
  if (::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  if (stdio && (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)) throw std::runtime_error("pipe failed");

  if (std::find(args.begin(), args.end(), "--state-dir") == args.end()) {
    args.push_back("--state-dir");
    args.push_back(state_dir_.path());
  }
  std::string program = PRISM_BIN_DIR "/prismd";
  std::vector<char*> argv{program.data()};
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdio) {
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  int rc = ::posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(err[1]);
  if (stdio) {
    ::close(in[0]);
    ::close(out[1]);
    stdin_write_ = in[1];
    stdout_read_ = out[0];
  }
  stderr_read_ = err[0];
  if (rc != 0) {
    pid_ = -1;
    throw std::runtime_error("cannot spawn " + program);
  }
  stderr_thread_ = std::thread([this] {
    char buffer[4096];
    for (;;) {
      ssize_t n = ::read(stderr_read_, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      std::lock_guard lock(mutex_);
      stderr_.append(buffer, static_cast<size_t>(n));
    }
  });
}

Prismd::~Prismd() {
  if (pid_ > 0 && !exit_code_) {
    signal(SIGTERM);
    if (!wait_exit(std::chrono::seconds(3))) {
      signal(SIGKILL);
      wait_exit(std::chrono::seconds(10));
    }
  }
  close_fd(stdin_write_);
  close_fd(stdout_read_);
  if (stderr_thread_.joinable()) stderr_thread_.join();
  close_fd(stderr_read_);
}

std::optional<std::string> Prismd::wait_ready(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      size_t at = stderr_.find("prismd: listening on ");
      if (at != std::string::npos) {
        size_t end = stderr_.find('\n', at);
        if (end != std::string::npos) return stderr_.substr(at, end - at);
      }
    }
    if (exit_code_ || std::chrono::steady_clock::now() > deadline) return std::nullopt;
    if (wait_exit(std::chrono::milliseconds(0))) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::optional<int> Prismd::wait_exit(std::chrono::milliseconds timeout) {
  if (exit_code_) return exit_code_;
  if (pid_ <= 0) return std::nullopt;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      // The pipe hits EOF now that the child is gone: collect everything it wrote.
      if (stderr_thread_.joinable()) stderr_thread_.join();
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void Prismd::signal(int sig) {
  if (pid_ > 0 && !exit_code_) ::kill(pid_, sig);
}

std::string Prismd::stderr_text() {
  std::lock_guard lock(mutex_);
  return stderr_;
}

int Prismd::take_stdout_read() { return std::exchange(stdout_read_, -1); }
int Prismd::take_stdin_write() { return std::exchange(stdin_write_, -1); }

std::unique_ptr<Prismd> start_prismd_with(const std::map<std::string, std::string>& env,
                                          const std::vector<std::string>& args) {
  for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
  auto daemon = std::make_unique<Prismd>(args);
  for (const auto& [k, v] : env) ::unsetenv(k.c_str());
  return daemon;
}

std::vector<pid_t> child_pids(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
    size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == pid) out.push_back(static_cast<pid_t>(std::stol(entry.path().filename().string())));
  }
  return out;
}

}  // namespace prism::test
