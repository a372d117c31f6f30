#include "daemon/channel.h"

namespace prism::daemon {

namespace {

class StdioChannel : public Channel {
 public:
  StdioChannel(boost::asio::io_context& io, int in_fd, int out_fd) : in_(io, in_fd), out_(io, out_fd) {}
  void async_read_some(boost::asio::mutable_buffer buffer, Handler handler) override {
    in_.async_read_some(buffer, std::move(handler));
  }
  void async_write(boost::asio::const_buffer buffer, Handler handler) override {
    boost::asio::async_write(out_, buffer, std::move(handler));
  }
  void close() override {
    boost::system::error_code ignored;
    in_.close(ignored);
    out_.close(ignored);
  }
  std::string describe() const override { return "stdio"; }

 private:
  boost::asio::posix::stream_descriptor in_;
  boost::asio::posix::stream_descriptor out_;
};

}  // namespace

std::unique_ptr<Channel> make_stdio_channel(boost::asio::io_context& io, int in_fd, int out_fd) {
  return std::make_unique<StdioChannel>(io, in_fd, out_fd);
}

}  // namespace prism::daemon
