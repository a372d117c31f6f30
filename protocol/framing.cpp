#include "protocol/framing.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace prism::protocol {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Finds the blank line that ends a header block; accepts "\r\n\r\n" and bare "\n\n".
// Returns the offset just past it, or npos.
size_t header_end(const std::string& buf) {
  for (size_t i = 0; i < buf.size(); ++i) {
    if (buf[i] != '\n') continue;
    size_t j = i + 1;
    if (j < buf.size() && buf[j] == '\r') ++j;
    if (j < buf.size() && buf[j] == '\n') return j + 1;
  }
  return std::string::npos;
}

}  // namespace

void FrameReader::feed(std::string_view bytes) {
  if (state_ == State::Discard) {
    size_t n = std::min(discard_left_, bytes.size());
    discard_left_ -= n;
    bytes.remove_prefix(n);
    if (discard_left_ == 0) state_ = State::Header;
  }
  buffer_.append(bytes);
}

bool FrameReader::has_event() {
  if (events_.empty()) parse();
  return !events_.empty();
}

FrameEvent FrameReader::pop() {
  FrameEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

void FrameReader::bad_header(std::string why) {
  events_.push_back({FrameEvent::Kind::BadHeader, {}, std::move(why)});
  state_ = State::Resync;
}

// Until one event is queued, or more bytes are needed.
void FrameReader::parse() {
  while (events_.empty()) {
    switch (state_) {
      case State::Resync: {
        // Skip to the next "Content-Length:", wherever it is: after a bad header block its body
        // usually follows, and the next frame's header starts right after that body, mid-line.
        static constexpr std::string_view kKey = "content-length:";
        size_t found = std::string::npos;
        for (size_t at = 0; at + kKey.size() <= buffer_.size(); ++at) {
          if (iequals(std::string_view(buffer_).substr(at, kKey.size()), kKey)) {
            found = at;
            break;
          }
        }
        if (found == std::string::npos) {
          // Keep a tail that may be the start of the key; drop the rest.
          if (buffer_.size() >= kKey.size()) buffer_.erase(0, buffer_.size() - (kKey.size() - 1));
          return;
        }
        buffer_.erase(0, found);
        state_ = State::Header;
        break;
      }
      case State::Header:
        if (!parse_header()) return;
        break;
      case State::Body:
        if (buffer_.size() < body_length_) return;
        events_.push_back({FrameEvent::Kind::Message, buffer_.substr(0, body_length_), {}});
        buffer_.erase(0, body_length_);
        state_ = State::Header;
        break;
      case State::Discard: {
        size_t n = std::min(discard_left_, buffer_.size());
        buffer_.erase(0, n);
        discard_left_ -= n;
        if (discard_left_ > 0) return;
        state_ = State::Header;
        break;
      }
    }
  }
}

// Returns false when more bytes are needed.
bool FrameReader::parse_header() {
  // Blank lines between frames are tolerated.
  size_t lead = 0;
  while (lead < buffer_.size() && (buffer_[lead] == '\r' || buffer_[lead] == '\n')) ++lead;
  buffer_.erase(0, lead);
  if (buffer_.empty()) return false;

  size_t end = header_end(buffer_);
  if (end == std::string::npos) {
    if (buffer_.size() > kMaxHeaderBytes) {
      buffer_.clear();
      bad_header("header block longer than " + std::to_string(kMaxHeaderBytes) + " bytes");
      return true;
    }
    return false;
  }
  std::string_view block(buffer_.data(), end);
  bool have_length = false;
  size_t length = 0;
  std::string problem;
  size_t at = 0;
  while (at < block.size()) {
    size_t nl = block.find('\n', at);
    std::string_view line = trim(block.substr(at, nl - at));
    at = nl + 1;
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      problem = "malformed header line '" + std::string(line.substr(0, 80)) + "' (expected 'Name: value')";
      break;
    }
    std::string_view name = trim(line.substr(0, colon));
    std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
        problem = "Content-Length '" + std::string(value.substr(0, 40)) + "' is not a non-negative integer";
        break;
      }
      have_length = true;
    }
    // Other headers (Content-Type) are accepted and ignored, as in LSP.
  }
  if (problem.empty() && !have_length) problem = "header block has no Content-Length";
  buffer_.erase(0, end);
  if (!problem.empty()) {
    bad_header(std::move(problem));
    return true;
  }
  if (length > max_body_) {
    events_.push_back({FrameEvent::Kind::Oversize, {},
                       "message of " + std::to_string(length) + " bytes exceeds the limit of " +
                           std::to_string(max_body_) + " bytes"});
    discard_left_ = length;
    state_ = State::Discard;
    return true;
  }
  body_length_ = length;
  state_ = State::Body;
  return true;
}

std::string encode_frame(std::string_view body) {
  std::string out = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out.append(body);
  return out;
}

}  // namespace prism::protocol
