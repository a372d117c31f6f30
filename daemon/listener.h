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

// `trusted`: the peer is the daemon's own user (a Unix socket peer whose uid was checked).
using AcceptHandler = std::function<void(std::unique_ptr<Channel>, bool trusted)>;
using RefuseHandler = std::function<void(const std::string& why)>;

class UnixListener {
 public:
  // Throws std::runtime_error when another daemon answers on `path`, or when it cannot listen.
  // A stale socket file (nothing answers) is removed first. The socket is 0600 whatever the umask.
  UnixListener(boost::asio::io_context& io, const std::string& path);
  ~UnixListener();
  // Peers of another uid (SO_PEERCRED) are refused: closed at once, `on_refuse` says who.
  void start(AcceptHandler on_accept, RefuseHandler on_refuse);
  // Stops accepting and removes the socket file, unless another daemon has replaced it since.
  void close();
  const std::string& path() const { return path_; }

 private:
  void accept();

  std::string path_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::steady_timer retry_;  // after a failed accept
  AcceptHandler on_accept_;
  RefuseHandler on_refuse_;
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
  boost::asio::steady_timer retry_;  // after a failed accept
  AcceptHandler on_accept_;
  uint16_t port_ = 0;
  std::string address_;
};

// True when something accepts connections on the Unix socket at `path`.
bool unix_socket_answers(const std::string& path);

}  // namespace prism::daemon
