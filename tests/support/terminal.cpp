#include "support/terminal.h"

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

namespace prism::test {

TerminalResult run_on_terminal(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, int columns,
                               double timeout_s) {
  TerminalResult result;
  winsize size{};
  size.ws_col = static_cast<unsigned short>(columns);
  size.ws_row = 50;
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &size);
  if (pid < 0) return result;
  if (pid == 0) {
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO: the child closed the terminal
    result.out.append(buf, size_t(n));
  }
  ::close(master);
  int status = 0;
  if (std::chrono::steady_clock::now() >= deadline) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return result;
  }
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  for (size_t at = result.out.find("\r\n"); at != std::string::npos; at = result.out.find("\r\n", at)) result.out.erase(at, 1);
  return result;
}

}  // namespace prism::test
