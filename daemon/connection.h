// One client: its FrameReader, its protocol Session, and an ordered write queue. Lives on the
// I/O thread; send() may be called from any thread (worker replies are posted over).
#pragma once
#include <array>
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

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `on_closed` runs once, on the I/O thread, when the connection is gone. `exit_code` is the
  // code `exit` asked for, or -1 when the stream ended or failed.
  using ClosedHandler = std::function<void(Connection&, int exit_code)>;

  // `trusted`: the peer is known to be the daemon's user (protocol::Session::trusted).
  Connection(boost::asio::io_context& io, std::unique_ptr<Channel> channel, bool trusted, protocol::Server& server,
             size_t max_message_bytes, Logger& log, ClosedHandler on_closed);

  void start();
  // Queues one message body (framed here). Thread-safe.
  void send(std::string body);
  // Stops reading, writes what is queued, then closes.
  void close_after_flush();
  void close_now();

  const protocol::SessionPtr& session() const { return session_; }
  std::string name() const;

 private:
  void read();
  void on_read(const boost::system::error_code& error, size_t bytes);
  void enqueue(std::string frame);
  void write_next();
  void finish(int exit_code);

  boost::asio::io_context& io_;
  std::unique_ptr<Channel> channel_;
  bool trusted_;
  protocol::Server& server_;
  protocol::FrameReader reader_;
  Logger& log_;
  ClosedHandler on_closed_;
  protocol::SessionPtr session_;
  std::array<char, 65536> buffer_{};
  std::deque<std::string> queue_;
  bool writing_ = false;
  bool closing_ = false;
  bool closed_ = false;
  int exit_code_ = -1;
};

}  // namespace prism::daemon
