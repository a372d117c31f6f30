#include "repl/client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace prism::repl {

namespace {

std::string errno_text() { return std::strerror(errno); }

// write() to a pipe whose reader is gone raises SIGPIPE, which would kill the REPL or the test
// run. Block it on this thread for the write and swallow a pending one, so EPIPE is reported.
ssize_t write_no_sigpipe(int fd, const char* data, size_t size) {
  ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
  if (n >= 0 || errno != ENOTSOCK) return n;
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  n = ::write(fd, data, size);
  int saved = errno;
  if (n < 0 && errno == EPIPE) {
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE)) {
      struct timespec zero {0, 0};
      sigtimedwait(&pipe_set, nullptr, &zero);
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved;
  return n;
}

}  // namespace

Client::Client(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {}

Client::~Client() {
  ::close(read_fd_);
  if (write_fd_ != read_fd_) ::close(write_fd_);
}

std::unique_ptr<Client> Client::connect_unix(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) throw ConnectionError("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw ConnectionError("socket: " + errno_text());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::string why = errno_text();
    ::close(fd);
    throw ConnectionError("cannot connect to prismd at " + path + ": " + why);
  }
  ucred peer{};
  socklen_t size = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.uid != ::geteuid()) {
    const std::string who = size == sizeof peer ? "uid " + std::to_string(peer.uid) : "an unknown user";
    ::close(fd);
    throw PeerRefused("refusing the server at " + path + ": it runs as " + who + ", not as you (uid " +
                      std::to_string(::geteuid()) + "); prism talks only to your own prismd (--socket names another)");
  }
  return std::unique_ptr<Client>(new Client(fd, fd));
}

std::unique_ptr<Client> Client::connect_tcp(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    throw ConnectionError("cannot resolve " + host + ": " + gai_strerror(rc));
  std::string why = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ::freeaddrinfo(found);
      return std::unique_ptr<Client>(new Client(fd, fd));
    }
    why = errno_text();
    ::close(fd);
  }
  ::freeaddrinfo(found);
  throw ConnectionError("cannot connect to prismd at " + host + ":" + service + ": " + why);
}

std::unique_ptr<Client> Client::from_fds(int read_fd, int write_fd) {
  return std::unique_ptr<Client>(new Client(read_fd, write_fd));
}

void Client::send_raw(const std::string& bytes) {
  std::lock_guard lock(write_mutex_);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write_no_sigpipe(write_fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ConnectionDropped("write to prismd failed: " + errno_text());
    done += static_cast<size_t>(n);
  }
}

void Client::notify(const std::string& method, const json& params) {
  json message{{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) message["params"] = params;
  send_raw(protocol::encode_frame(message.dump()));
}

std::optional<json> Client::read_message(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (reader_.has_event()) {
      protocol::FrameEvent event = reader_.pop();
      if (event.kind != protocol::FrameEvent::Kind::Message)
        throw ConnectionError("bad frame from prismd: " + event.error);
      json message = json::parse(event.body, nullptr, false);
      if (message.is_discarded()) throw ConnectionError("prismd sent invalid JSON");
      return message;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() < 0) return std::nullopt;
    pollfd p{read_fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw ConnectionError("poll failed: " + errno_text());
    if (ready == 0) return std::nullopt;
    char buffer[65536];
    ssize_t n = ::read(read_fd_, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw ConnectionDropped("read from prismd failed: " + errno_text());
    if (n == 0) throw ConnectionDropped("prismd closed the connection");
    reader_.feed(std::string_view(buffer, static_cast<size_t>(n)));
  }
}

json Client::request(const std::string& method, const json& params, std::chrono::milliseconds timeout,
                     const std::function<void(int64_t id)>& on_sent) {
  const int64_t id = next_id_++;
  json message{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) message["params"] = params;
  send_raw(protocol::encode_frame(message.dump()));
  if (on_sent) on_sent(id);
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    std::optional<json> reply = left.count() >= 0 ? read_message(left) : std::nullopt;
    if (!reply) throw ConnectionError("timed out waiting for the response to '" + method + "'");
    if (!reply->is_object()) continue;
    if (reply->contains("method") && !reply->contains("id")) {
      if (handler_)
        handler_(*reply);
      else
        notifications_.push_back(std::move(*reply));
      continue;
    }
    if (reply->value("id", json()) != json(id)) {
      other_responses_.push_back(std::move(*reply));
      continue;
    }
    if (auto error = reply->find("error"); error != reply->end() && error->is_object())
      throw RpcError(error->value("code", 0), error->value("message", std::string("error")),
                     error->value("data", json()));
    return reply->value("result", json());
  }
}

}  // namespace prism::repl
