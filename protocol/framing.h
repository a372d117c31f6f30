// LSP base protocol framing: "Content-Length: N\r\n\r\n" followed by N bytes of JSON.
// FrameReader is incremental (feed it whatever the socket delivered: half a header, three frames
// at once) and never needs the whole stream. Used by the daemon and by the REPL client. Frames are
// parsed one at a time, as has_event() asks for them: a limit changed after one message (the
// daemon's, once a TCP peer authenticated) applies to the next.
#pragma once
#include <cstddef>
#include <deque>
#include <string>
#include <string_view>

namespace prism::protocol {

struct FrameEvent {
  enum class Kind {
    Message,    // body holds one complete message
    BadHeader,  // error says what was wrong; the reader skipped to the next header block
    Oversize,   // a message longer than the limit: its body is discarded, the stream stays usable
  };
  Kind kind = Kind::Message;
  std::string body;
  std::string error;
};

class FrameReader {
 public:
  explicit FrameReader(size_t max_body_bytes = 64u << 20) : max_body_(max_body_bytes) {}

  // Consumes bytes; complete frames and errors come out of has_event()/pop() in order.
  void feed(std::string_view bytes);
  // Parses the next frame when none is waiting.
  bool has_event();
  FrameEvent pop();  // only after has_event() said true

  size_t max_body_bytes() const { return max_body_; }
  // For frames whose header is read from now on.
  void set_max_body_bytes(size_t bytes) { max_body_ = bytes; }
  static constexpr size_t kMaxHeaderBytes = 8192;

 private:
  enum class State { Header, Body, Discard, Resync };
  void parse();
  bool parse_header();
  void bad_header(std::string why);

  size_t max_body_;
  State state_ = State::Header;
  std::string buffer_;
  size_t body_length_ = 0;
  size_t discard_left_ = 0;
  std::deque<FrameEvent> events_;
};

// Prepends the Content-Length header.
std::string encode_frame(std::string_view body);

}  // namespace prism::protocol
