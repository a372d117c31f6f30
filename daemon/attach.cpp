#include "daemon/attach.h"

#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

#include "engine/util/process.h"
#include "protocol/endpoint.h"

namespace prism::daemon {

namespace {

// A connected Unix socket to `path`, or -1.
int connect_to(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return -1;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

// Copies what is readable on `from` to `to`; false at end of input or on an error.
bool pump(int from, int to) {
  char buffer[65536];
  ssize_t n = ::read(from, buffer, sizeof buffer);
  while (n < 0 && errno == EINTR) n = ::read(from, buffer, sizeof buffer);
  return n > 0 && write_all(to, buffer, size_t(n));
}

}  // namespace

int attach_stdio(const Options& options) {
  const std::string socket = options.socket.empty() ? protocol::default_socket_path() : options.socket;
  int fd = connect_to(socket);
  if (fd < 0) {
    // None answers: start the shared daemon, as the REPL would, and wait for its socket.
    char self[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    const std::string binary = n > 0 ? std::string(self, size_t(n)) : "prismd";
    std::vector<std::string> argv = {binary, "--socket", socket, "--idle-exit", "1800"};
    const std::string state = options.state_dir.empty() ? protocol::state_dir() : options.state_dir;
    if (!options.state_dir.empty()) argv.insert(argv.end(), {"--state-dir", options.state_dir});
    if (start_detached(argv, state + "/prismd.log") < 0) {
      std::cerr << "prismd: cannot start the shared daemon: fork failed\n";
      return 1;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (fd < 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      fd = connect_to(socket);
    }
    if (fd < 0) {
      std::cerr << "prismd: no daemon answers on " << socket << " (see " << state << "/prismd.log)\n";
      return 1;
    }
  }
  // The editor's end of input: the daemon still sends its last replies, then closes.
  bool editor_open = true;
  for (;;) {
    pollfd fds[2] = {{editor_open ? STDIN_FILENO : -1, POLLIN, 0}, {fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (!pump(fd, STDOUT_FILENO)) break;
    }
    if (editor_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && !pump(STDIN_FILENO, fd)) {
      editor_open = false;
      ::shutdown(fd, SHUT_WR);
    }
  }
  ::close(fd);
  return 0;
}

}  // namespace prism::daemon
