// A non-blocking client connection to prismd's Unix socket: writes whatever bytes it is given and
// reads the daemon's LSP frames back (counted; kept only when asked).
#pragma once
#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prism::fuzz {

using Clock = std::chrono::steady_clock;

class Connection {
 public:
  // Nullopt when nothing accepts on `socket_path`.
  static std::optional<Connection> open(const std::string& socket_path, bool keep_bodies = false);
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  enum class SendResult { Ok, Closed, Stalled };
  // Writes all of `bytes`, reading replies while the socket is full. Stalled: the daemon did not
  // take the bytes within `patience`; Closed: it closed the connection.
  SendResult send(std::string_view bytes, std::chrono::milliseconds patience);
  // Reads whatever arrives within `wait`. False when the daemon has closed the connection.
  bool drain(std::chrono::milliseconds wait);
  // The next complete body (keep_bodies only), waiting until `deadline`.
  std::optional<std::string> next_body(Clock::time_point deadline);

  // What came back, by the first key of each body (nlohmann prints keys sorted): "error",
  // "id" (a result), "jsonrpc" (a notification); InternalError answers keep their first bytes.
  struct Replies {
    size_t results = 0, errors = 0, internal_errors = 0, notifications = 0;
    std::vector<std::string> internal;  // the first few InternalError bodies (truncated)
  };
  size_t frames_read() const { return frames_read_; }
  const Replies& replies() const { return replies_; }
  bool closed() const { return closed_; }

 private:
  explicit Connection(int fd, bool keep_bodies) : fd_(fd), keep_bodies_(keep_bodies) {}
  bool read_available();  // false on EOF or error
  void split_frames();
  void classify(const std::string& head);
  int fd_ = -1;
  bool keep_bodies_ = false;
  bool closed_ = false;
  size_t frames_read_ = 0;
  size_t body_left_ = 0;  // bytes of the current body still to come (bodies not kept)
  std::string in_;
  std::string head_;  // the first bytes of the body being skipped
  std::deque<std::string> bodies_;
  Replies replies_;
};

}  // namespace prism::fuzz
