// Accepting sockets: the Unix socket (guarded against a second daemon, cleaned up on close) and
// TCP on loopback.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include <sys/types.h>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "daemon/channel.h"
#include "daemon/options.h"

namespace prism::daemon {

using AcceptHandler = std::function<void(std::unique_ptr<Channel>)>;

class UnixListener {
 public:
  // Throws std::runtime_error when another daemon answers on `path`, or when it cannot listen.
  // A stale socket file (nothing answers) is removed first.
  UnixListener(boost::asio::io_context& io, const std::string& path);
  ~UnixListener();
  void start(AcceptHandler on_accept);
  // Stops accepting and removes the socket file, unless another daemon has replaced it since.
  void close();
  const std::string& path() const { return path_; }

 private:
  void accept();

  std::string path_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  AcceptHandler on_accept_;
  ino_t inode_ = 0;
  bool closed_ = false;
};

class TcpListener {
 public:
  TcpListener(boost::asio::io_context& io, const TcpEndpoint& endpoint);
  void start(AcceptHandler on_accept);
  void close();
  // "tcp:127.0.0.1:PORT" with the actual port.
  const std::string& address() const { return address_; }
  uint16_t port() const { return port_; }

 private:
  void accept();

  boost::asio::ip::tcp::acceptor acceptor_;
  AcceptHandler on_accept_;
  uint16_t port_ = 0;
  std::string address_;
};

// True when something accepts connections on the Unix socket at `path`.
bool unix_socket_answers(const std::string& path);

}  // namespace prism::daemon
