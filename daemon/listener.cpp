#include "daemon/listener.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace prism::daemon {

namespace asio = boost::asio;

namespace {

// After a failed accept (EMFILE, ENFILE, ENOBUFS: out of descriptors or memory) the pending
// connection is still there, and accepting again at once would spin at full CPU (issue 46, 2).
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

}  // namespace

bool unix_socket_answers(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool answers = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return answers;
}

UnixListener::UnixListener(asio::io_context& io, const std::string& path) : path_(path), acceptor_(io), retry_(io) {
  if (path.size() >= sizeof(sockaddr_un::sun_path))
    throw std::runtime_error("socket path is too long (" + std::to_string(path.size()) + " bytes): " + path);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw std::runtime_error(path + " exists and is not a socket; not touching it");
    if (unix_socket_answers(path))
      throw std::runtime_error("another prismd is already listening on " + path);
    ::unlink(path.c_str());  // stale: left behind by a daemon that died
  }
  asio::local::stream_protocol::endpoint endpoint(path);
  boost::system::error_code error;
  acceptor_.open(endpoint.protocol(), error);
  if (!error) {
    // Created 0600 (not 0777 & ~umask): only connect() needs write permission, and only we may.
    mode_t old_umask = ::umask(0177);
    acceptor_.bind(endpoint, error);
    ::umask(old_umask);
  }
  if (!error && ::chmod(path.c_str(), 0600) != 0)
    error = boost::system::error_code(errno, boost::system::system_category());
  if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error) throw std::runtime_error("cannot listen on " + path + ": " + error.message());
  if (::lstat(path.c_str(), &st) == 0) inode_ = st.st_ino;
}

UnixListener::~UnixListener() { close(); }

void UnixListener::start(AcceptHandler on_accept, RefuseHandler on_refuse) {
  on_accept_ = std::move(on_accept);
  on_refuse_ = std::move(on_refuse);
  accept();
}

void UnixListener::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& error, asio::local::stream_protocol::socket socket) {
    if (closed_ || error == asio::error::operation_aborted) return;
    if (!error) {
      // The socket file is 0600 in a 0700 directory; the peer's uid is checked all the same (a
      // looser mode set by hand, a descriptor passed on).
      ucred peer{};
      socklen_t size = sizeof peer;
      if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.uid != ::geteuid()) {
        boost::system::error_code ignored;
        socket.close(ignored);
        if (on_refuse_) on_refuse_("refused a Unix socket peer of uid " + std::to_string(peer.uid) + " (pid " +
                                   std::to_string(peer.pid) + "): not this daemon's user");
      } else {
        on_accept_(std::make_unique<SocketChannel<asio::local::stream_protocol::socket>>(std::move(socket), "unix"), true);
      }
    } else {
      retry_.expires_after(kAcceptRetry);
      retry_.async_wait([this](const boost::system::error_code& e) {
        if (!e && !closed_) accept();
      });
      return;
    }
    accept();
  });
}

void UnixListener::close() {
  if (closed_) return;
  closed_ = true;
  retry_.cancel();
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_ino == inode_) ::unlink(path_.c_str());
}

TcpListener::TcpListener(asio::io_context& io, const TcpEndpoint& endpoint) : acceptor_(io), retry_(io) {
  asio::ip::tcp::endpoint at(asio::ip::make_address(endpoint.address), endpoint.port);
  boost::system::error_code error;
  acceptor_.open(at.protocol(), error);
  if (!error) acceptor_.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor_.bind(at, error);
  if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error)
    throw std::runtime_error("cannot listen on tcp:" + endpoint.address + ":" + std::to_string(endpoint.port) + ": " +
                             error.message());
  port_ = acceptor_.local_endpoint().port();
  auto address = acceptor_.local_endpoint().address();
  address_ = "tcp:" + (address.is_v6() ? "[" + address.to_string() + "]" : address.to_string()) + ":" +
             std::to_string(port_);
}

void TcpListener::start(AcceptHandler on_accept) {
  on_accept_ = std::move(on_accept);
  accept();
}

void TcpListener::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& error, asio::ip::tcp::socket socket) {
    if (!acceptor_.is_open() || error == asio::error::operation_aborted) return;
    if (!error) {
      boost::system::error_code ignored;
      auto peer = socket.remote_endpoint(ignored);
      std::string description = "tcp " + peer.address().to_string() + ":" + std::to_string(peer.port());
      // Anyone on this machine can reach a loopback port: the session must present the token.
      on_accept_(std::make_unique<SocketChannel<asio::ip::tcp::socket>>(std::move(socket), description), false);
    } else {
      retry_.expires_after(kAcceptRetry);
      retry_.async_wait([this](const boost::system::error_code& e) {
        if (!e && acceptor_.is_open()) accept();
      });
      return;
    }
    accept();
  });
}

void TcpListener::close() {
  retry_.cancel();
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

}  // namespace prism::daemon
