#include "engine/util/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace prism {

void die_with_parent(pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // it died before the prctl: nobody would stop us
}

namespace {

// The child of run_process, between fork and exec: it leads a process group, runs the command as
// its own child in that group and waits for it. A compiler driver starts children of its own (cc1plus,
// collect2, ld) that no parent-death signal reaches; when prism dies, this keeper kills the whole group,
// so no linker writes into the kernel cache after a restart cleaned it (D13). Only async-signal-safe
// calls after the fork, bar setenv/execvp's own work in the grandchild.
[[noreturn]] void keep_group(pid_t parent, const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                             int cwd_fd) {
  // Not die_with_parent: its SIGKILL would end this keeper alone, and it comes when the forking
  // thread ends, not prism. The loop below watches the parent process instead.
  ::setpgid(0, 0);  // its own group, so a time-out or the keeper kills what it started too
  pid_t command = ::fork();
  if (command < 0) ::_exit(127);
  if (command == 0) {
    if (cwd_fd >= 0 && ::fchdir(cwd_fd) != 0) ::_exit(127);
    for (int fd = 3; fd < 256; ++fd) ::close(fd);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  for (int fd = 0; fd < 256; ++fd) ::close(fd);  // the pipes end when the command's group ends
  int status = 0;
  long tick_ns = 500 * 1000;  // quick commands are waited for quickly; long ones polled every 10 ms
  for (;;) {
    pid_t got = ::waitpid(command, &status, WNOHANG);
    if (got == command) break;
    if (got < 0 && errno != EINTR) ::_exit(127);
    if (::getppid() != parent) ::kill(0, SIGKILL);  // prism died: the whole group, this keeper too
    const timespec tick{0, tick_ns};
    ::nanosleep(&tick, nullptr);
    tick_ns = std::min(2 * tick_ns, 10L * 1000 * 1000);
  }
  if (WIFSIGNALED(status)) {  // end the way the command ended
    ::signal(WTERMSIG(status), SIG_DFL);
    ::kill(::getpid(), WTERMSIG(status));
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input, const std::map<std::string, std::string>& env,
                          std::chrono::milliseconds limit, int cwd_fd) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe(in_pipe) || ::pipe(out_pipe) || ::pipe(err_pipe)) throw std::runtime_error("pipe failed");
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    keep_group(parent, argv, env, cwd_fd);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::signal(SIGPIPE, SIG_IGN);
  ::fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);

  ProcessResult r;
  size_t written = 0;
  int in_fd = in_pipe[1];
  if (input.empty()) {
    ::close(in_fd);
    in_fd = -1;
  }
  auto deadline = std::chrono::steady_clock::now() + limit;
  int open_outputs = 2;
  while (open_outputs > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd fds[3] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}, {in_fd, POLLOUT, 0}};
    int n = ::poll(fds, in_fd >= 0 ? 3 : 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(got));
      } else {
        ::close(fds[i].fd);
        (i == 0 ? out_pipe[0] : err_pipe[0]) = -1;
        --open_outputs;
      }
    }
    if (in_fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t put = ::write(in_fd, input.data() + written, input.size() - written);
      if (put > 0) written += static_cast<size_t>(put);
      if (put < 0 || written == input.size()) {
        ::close(in_fd);
        in_fd = -1;
      }
    }
  }
  for (int fd : {out_pipe[0], err_pipe[0], in_fd})
    if (fd >= 0) ::close(fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  return r;
}

pid_t start_detached(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setsid();
  const int null_fd = ::open("/dev/null", O_RDONLY);
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (null_fd >= 0) ::dup2(null_fd, 0);
  if (log_fd >= 0) {
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
  }
  for (int fd = 3; fd < 256; ++fd) ::close(fd);
  ::execvp(args[0], args.data());
  std::fprintf(stderr, "cannot execute %s: %s\n", args[0], std::strerror(errno));
  ::_exit(127);
}

}  // namespace prism
