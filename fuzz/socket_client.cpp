#include "fuzz/socket_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace prism::fuzz {

std::optional<Connection> Connection::open(const std::string& socket_path, bool keep_bodies) {
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof addr.sun_path) return std::nullopt;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  // Non-blocking from the start: a daemon that stopped accepting fills its backlog, and a blocking
  // connect would then wait forever (EAGAIN instead: the liveness check retries until its deadline).
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return std::nullopt;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  return Connection(fd, keep_bodies);
}

Connection::Connection(Connection&& other) noexcept { *this = std::move(other); }

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this == &other) return *this;
  if (fd_ >= 0) ::close(fd_);
  fd_ = std::exchange(other.fd_, -1);
  keep_bodies_ = other.keep_bodies_;
  closed_ = other.closed_;
  frames_read_ = other.frames_read_;
  body_left_ = other.body_left_;
  in_ = std::move(other.in_);
  head_ = std::move(other.head_);
  bodies_ = std::move(other.bodies_);
  replies_ = std::move(other.replies_);
  return *this;
}

Connection::~Connection() {
  if (fd_ >= 0) ::close(fd_);
}

Connection::SendResult Connection::send(std::string_view bytes, std::chrono::milliseconds patience) {
  auto deadline = Clock::now() + patience;
  while (!bytes.empty()) {
    if (closed_) return SendResult::Closed;
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(size_t(n));
      deadline = Clock::now() + patience;  // progress: the daemon is reading
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      closed_ = true;
      return SendResult::Closed;
    }
    if (Clock::now() >= deadline) return SendResult::Stalled;
    pollfd p{fd_, POLLOUT | POLLIN, 0};
    ::poll(&p, 1, 50);
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) read_available();
  }
  return SendResult::Ok;
}

bool Connection::read_available() {
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n > 0) {
      in_.append(buffer, size_t(n));
      split_frames();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    closed_ = true;  // EOF or reset
    return false;
  }
}

constexpr size_t kHeadBytes = 400;

void Connection::classify(const std::string& head) {
  ++frames_read_;
  if (head.rfind("{\"error\"", 0) == 0) {
    ++replies_.errors;
    if (head.rfind("{\"error\":{\"code\":-32603", 0) == 0) {
      ++replies_.internal_errors;
      if (replies_.internal.size() < 20) replies_.internal.push_back(head);
    }
  } else if (head.rfind("{\"id\"", 0) == 0) {
    ++replies_.results;
  } else {
    ++replies_.notifications;
  }
}

void Connection::split_frames() {
  for (;;) {
    if (body_left_ > 0) {  // skipping a body we do not keep
      size_t n = std::min(body_left_, in_.size());
      if (head_.size() < kHeadBytes) head_.append(in_, 0, std::min(n, kHeadBytes - head_.size()));
      in_.erase(0, n);
      body_left_ -= n;
      if (body_left_ > 0) return;
      classify(head_);
    }
    size_t end = in_.find("\r\n\r\n");
    if (end == std::string::npos) return;
    size_t at = in_.find("Content-Length:");
    size_t length = at < end ? std::strtoull(in_.c_str() + at + 15, nullptr, 10) : 0;
    if (keep_bodies_) {
      if (in_.size() < end + 4 + length) return;
      bodies_.push_back(in_.substr(end + 4, length));
      in_.erase(0, end + 4 + length);
      ++frames_read_;
    } else {
      in_.erase(0, end + 4);
      body_left_ = length;
      head_.clear();
      if (length == 0) classify(head_);
    }
  }
}

bool Connection::drain(std::chrono::milliseconds wait) {
  if (closed_) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, int(wait.count())) > 0) read_available();
  return !closed_;
}

std::optional<std::string> Connection::next_body(Clock::time_point deadline) {
  while (bodies_.empty()) {
    if (closed_) return std::nullopt;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    drain(std::min(left, std::chrono::milliseconds(100)));
  }
  std::string body = std::move(bodies_.front());
  bodies_.pop_front();
  return body;
}

}  // namespace prism::fuzz
