#include "daemon/connection.h"

#include <malloc.h>

#include <algorithm>

namespace prism::daemon {

Connection::Connection(boost::asio::io_context& io, std::unique_ptr<Channel> channel, bool trusted,
                       protocol::Server& server, const ConnectionLimits& limits, Logger& log, ClosedHandler on_closed)
    : io_(io),
      channel_(std::move(channel)),
      trusted_(trusted),
      limits_(limits),
      authentication_timer_(io),
      resume_timer_(io),
      server_(server),
      reader_(trusted ? limits.max_message_bytes : std::min(limits.max_message_bytes, limits.unauthenticated_message_bytes)),
      log_(log),
      on_closed_(std::move(on_closed)) {}

void Connection::log(const std::string& text) {
  if (authenticated()) log_.line(name() + text);
  else log_.peer_line(name() + text);
}

std::string Connection::name() const {
  return "client " + std::to_string(session_ ? session_->id() : 0) + " (" + channel_->describe() + ")";
}

void Connection::start() {
  // The session's callbacks hold the connection weakly: a reply from a worker after the client
  // left is simply dropped.
  std::weak_ptr<Connection> weak = shared_from_this();
  protocol::Session::Callbacks callbacks;
  callbacks.send = [weak](std::string body) {
    if (auto self = weak.lock()) self->send(std::move(body));
  };
  callbacks.close = [weak, &io = io_](int exit_code) {
    boost::asio::post(io, [weak, exit_code] {
      if (auto self = weak.lock()) {
        self->exit_code_ = exit_code;
        self->close_after_flush();
      }
    });
  };
  session_ = server_.connect(std::move(callbacks), trusted_);
  log(" connected");
  if (!trusted_) watch_authentication();
  read();
}

void Connection::watch_authentication() {
  authentication_timer_.expires_after(limits_.authentication_deadline);
  authentication_timer_.async_wait([weak = std::weak_ptr<Connection>(shared_from_this())](const boost::system::error_code& error) {
    auto self = weak.lock();
    if (error || !self || self->closed_ || self->authenticated()) return;
    self->log(": closed: no token within " + std::to_string(self->limits_.authentication_deadline.count()) + " ms");
    self->close_now();
  });
}

void Connection::send(std::string body) {
  std::string frame = protocol::encode_frame(body);
  unwritten_bytes_ += frame.size();
  boost::asio::post(io_, [self = shared_from_this(), frame = std::move(frame)]() mutable {
    const size_t size = frame.size();
    if (!self->enqueue(std::move(frame))) self->unwritten_bytes_ -= size;
  });
}

bool Connection::backlogged() const {
  return unwritten_bytes_ > limits_.max_unwritten_reply_bytes || (session_ && session_->requests_in_flight() >= limits_.max_requests_in_flight);
}

void Connection::resume_when_drained() {
  backlog_seen_ = true;
  resume_timer_.expires_after(std::chrono::milliseconds(5));
  resume_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (error || self->closed_ || self->closing_) return;
    if (self->backlogged()) self->resume_when_drained();
    else self->read();
  });
}

void Connection::read() {
  channel_->async_read_some(boost::asio::buffer(buffer_),
                            [self = shared_from_this()](const boost::system::error_code& error, size_t bytes) {
                              self->on_read(error, bytes);
                            });
}

void Connection::on_read(const boost::system::error_code& error, size_t bytes) {
  if (closed_ || closing_) return;
  if (error) {
    if (error != boost::asio::error::eof && error != boost::asio::error::operation_aborted)
      log(": read failed: " + error.message());
    finish(-1);
    return;
  }
  reader_.feed(std::string_view(buffer_.data(), bytes));
  while (!closing_ && reader_.has_event()) {
    protocol::FrameEvent event = reader_.pop();
    // The guard per connection: the server answers every message itself, so anything escaping
    // here is a bug; it costs this message, never the event loop the other clients share.
    try {
      if (event.kind == protocol::FrameEvent::Kind::Message)
        server_.receive(session_, event.body);
      else
        server_.frame_error(session_, event);
    } catch (const std::exception& e) {
      log(std::string(": internal error: ") + e.what());
      send(protocol::to_wire(protocol::make_error(nullptr, protocol::kInternalError,
                                                  std::string("internal error: ") + e.what())));
    }
    if (!authenticated()) {
      // Anything but a successful initialize, a frame error included: answered (the reply is
      // posted before this), then closed; nothing more of this peer is read (docs/protocol.md
      // "Security").
      boost::asio::post(io_, [self = shared_from_this()] { self->close_after_flush(); });
      return;
    }
    reader_.set_max_body_bytes(limits_.max_message_bytes);
    authentication_timer_.cancel();
  }
  if (closing_) return;
  if (backlogged()) resume_when_drained();
  else read();
}

bool Connection::enqueue(std::string frame) {
  if (closed_) return false;
  queue_.push_back(std::move(frame));
  if (!writing_) write_next();
  return true;
}

void Connection::write_next() {
  if (queue_.empty()) {
    writing_ = false;
    if (closing_) finish(exit_code_);
    return;
  }
  writing_ = true;
  channel_->async_write(boost::asio::buffer(queue_.front()),
                        [self = shared_from_this()](const boost::system::error_code& error, size_t) {
                          if (self->closed_) return;
                          if (error) {
                            self->log(": write failed: " + error.message());
                            self->finish(-1);
                            return;
                          }
                          self->unwritten_bytes_ -= self->queue_.front().size();
                          self->queue_.pop_front();
                          self->write_next();
                        });
}

void Connection::close_after_flush() {
  if (closed_) return;
  closing_ = true;
  if (!writing_) finish(exit_code_);
}

void Connection::close_now() { finish(exit_code_); }

void Connection::finish(int exit_code) {
  if (closed_) return;
  closed_ = true;
  authentication_timer_.cancel();
  resume_timer_.cancel();
  for (const auto& frame : queue_) unwritten_bytes_ -= frame.size();
  queue_.clear();
  channel_->close();
  server_.disconnect(session_);
  log(" disconnected");
  // A backlog's buffers went back to malloc, which keeps them unless asked: give them to the
  // system, so a flood's peak does not stay the daemon's size.
  if (backlog_seen_) ::malloc_trim(0);
  if (on_closed_) on_closed_(*this, exit_code);
}

}  // namespace prism::daemon
