// One client: its FrameReader, its protocol Session, and an ordered write queue. Lives on the
// I/O thread; send() may be called from any thread (worker replies are posted over).
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "daemon/channel.h"
#include "daemon/log.h"
#include "protocol/framing.h"
#include "protocol/server.h"

namespace prism::daemon {

// What a peer that has not authenticated yet (a TCP client before its token) may cost the daemon
// (docs/protocol.md "Security"): one message of at most `unauthenticated_message_bytes`, for at
// most `authentication_deadline`; anything but a successful `initialize` is answered, then the
// connection is closed.
//
// And what a client that sends without reading its replies may cost (issue 61, 7): once its
// unwritten replies pass `max_unwritten_reply_bytes`, or `max_requests_in_flight` of its requests
// are being worked on, its socket is not read until they drain, so the daemon's memory stays
// bounded and the client's own sends block instead.
struct ConnectionLimits {
  size_t max_message_bytes = 64u << 20;
  size_t unauthenticated_message_bytes = 64u << 10;  // an `initialize` with its token is far smaller
  std::chrono::milliseconds authentication_deadline{10000};
  size_t max_unwritten_reply_bytes = 16u << 20;
  size_t max_requests_in_flight = 256;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `on_closed` runs once, on the I/O thread, when the connection is gone. `exit_code` is the
  // code `exit` asked for, or -1 when the stream ended or failed.
  using ClosedHandler = std::function<void(Connection&, int exit_code)>;

  // `trusted`: the peer is known to be the daemon's user (protocol::Session::trusted).
  Connection(boost::asio::io_context& io, std::unique_ptr<Channel> channel, bool trusted, protocol::Server& server,
             const ConnectionLimits& limits, Logger& log, ClosedHandler on_closed);

  void start();
  // Queues one message body (framed here). Thread-safe.
  void send(std::string body);
  // Stops reading, writes what is queued, then closes.
  void close_after_flush();
  void close_now();

  const protocol::SessionPtr& session() const { return session_; }
  std::string name() const;
  // The peer is the daemon's user, or presented the token.
  bool authenticated() const { return trusted_ || (session_ && session_->initialized); }

 private:
  void read();
  void on_read(const boost::system::error_code& error, size_t bytes);
  // Too much unwritten or in flight: reading waits (ConnectionLimits).
  bool backlogged() const;
  // Reads again once the backlog has drained, checking every few milliseconds meanwhile.
  void resume_when_drained();
  // A line about this client: rate-limited while it has not authenticated (Logger::peer_line).
  void log(const std::string& text);
  void watch_authentication();
  bool enqueue(std::string frame);  // false: closed, the frame dropped
  void write_next();
  void finish(int exit_code);

  boost::asio::io_context& io_;
  std::unique_ptr<Channel> channel_;
  bool trusted_;
  ConnectionLimits limits_;
  boost::asio::steady_timer authentication_timer_;
  boost::asio::steady_timer resume_timer_;
  protocol::Server& server_;
  protocol::FrameReader reader_;
  Logger& log_;
  ClosedHandler on_closed_;
  protocol::SessionPtr session_;
  std::array<char, 65536> buffer_{};
  std::deque<std::string> queue_;
  std::atomic<size_t> unwritten_bytes_{0};  // framed by send(), not yet written
  bool backlog_seen_ = false;               // reading waited at least once: memory to give back
  bool writing_ = false;
  bool closing_ = false;
  bool closed_ = false;
  int exit_code_ = -1;
};

}  // namespace prism::daemon
