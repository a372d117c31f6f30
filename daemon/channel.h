// A byte stream a Connection reads and writes: a Unix or TCP socket, or stdin/stdout.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

namespace prism::daemon {

class Channel {
 public:
  using Handler = std::function<void(const boost::system::error_code&, size_t)>;
  virtual ~Channel() = default;
  virtual void async_read_some(boost::asio::mutable_buffer buffer, Handler handler) = 0;
  // Writes the whole buffer.
  virtual void async_write(boost::asio::const_buffer buffer, Handler handler) = 0;
  virtual void close() = 0;
  virtual std::string describe() const = 0;  // for the log: "unix", "tcp 127.0.0.1:40112", "stdio"
};

template <class Socket>
class SocketChannel : public Channel {
 public:
  SocketChannel(Socket socket, std::string description)
      : socket_(std::move(socket)), description_(std::move(description)) {}
  void async_read_some(boost::asio::mutable_buffer buffer, Handler handler) override {
    socket_.async_read_some(buffer, std::move(handler));
  }
  void async_write(boost::asio::const_buffer buffer, Handler handler) override {
    boost::asio::async_write(socket_, buffer, std::move(handler));
  }
  void close() override {
    boost::system::error_code ignored;
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.close(ignored);
  }
  std::string describe() const override { return description_; }

 private:
  Socket socket_;
  std::string description_;
};

// Reads `in_fd` and writes `out_fd` (both taken over and closed by the channel).
std::unique_ptr<Channel> make_stdio_channel(boost::asio::io_context& io, int in_fd, int out_fd);

}  // namespace prism::daemon
