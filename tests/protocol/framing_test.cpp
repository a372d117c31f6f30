// FrameReader: LSP base-protocol framing, fed the way sockets deliver bytes.
#include <catch2/catch.hpp>

#include "protocol/framing.h"

using prism::protocol::encode_frame;
using prism::protocol::FrameEvent;
using prism::protocol::FrameReader;

namespace {

std::vector<FrameEvent> drain(FrameReader& reader) {
  std::vector<FrameEvent> out;
  while (reader.has_event()) out.push_back(reader.pop());
  return out;
}

std::vector<std::string> bodies(const std::vector<FrameEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.kind == FrameEvent::Kind::Message ? e.body : "<" + e.error + ">");
  return out;
}

}  // namespace

TEST_CASE("a frame split at every byte boundary comes out whole", "[protocol][framing]") {
  const std::string body = R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"é":"ü"}})";
  const std::string stream = encode_frame(body) + encode_frame("{}");
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    FrameReader reader;
    reader.feed(std::string_view(stream).substr(0, cut));
    auto first = drain(reader);
    reader.feed(std::string_view(stream).substr(cut));
    auto rest = drain(reader);
    first.insert(first.end(), rest.begin(), rest.end());
    INFO("cut at " << cut);
    REQUIRE(bodies(first) == std::vector<std::string>{body, "{}"});
  }
}

TEST_CASE("a stream fed one byte at a time", "[protocol][framing]") {
  const std::string stream = encode_frame("[1]") + "\r\n" + encode_frame("[2,3]");
  FrameReader reader;
  std::vector<FrameEvent> events;
  for (char c : stream) {
    reader.feed(std::string_view(&c, 1));
    auto got = drain(reader);
    events.insert(events.end(), got.begin(), got.end());
  }
  CHECK(bodies(events) == std::vector<std::string>{"[1]", "[2,3]"});
}

TEST_CASE("several frames coalesced in one feed", "[protocol][framing]") {
  FrameReader reader;
  reader.feed(encode_frame("a") + encode_frame("") + "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" +
              "content-length: 2\r\n\r\nbc" + encode_frame("def"));
  CHECK(bodies(drain(reader)) == std::vector<std::string>{"a", "", "bc", "def"});
}

TEST_CASE("bad header blocks are reported and the reader recovers", "[protocol][framing]") {
  SECTION("non-numeric Content-Length") {
    FrameReader reader;
    reader.feed("Content-Length: twelve\r\n\r\n" + encode_frame("ok"));
    auto events = drain(reader);
    REQUIRE(events.size() == 2);
    CHECK(events[0].kind == FrameEvent::Kind::BadHeader);
    CHECK_THAT(events[0].error, Catch::Contains("twelve"));
    CHECK(events[1].body == "ok");
  }
  SECTION("negative Content-Length") {
    FrameReader reader;
    reader.feed("Content-Length: -5\r\n\r\n" + encode_frame("ok"));
    auto events = drain(reader);
    REQUIRE(events.size() == 2);
    CHECK(events[0].kind == FrameEvent::Kind::BadHeader);
    CHECK(events[1].body == "ok");
  }
  SECTION("missing Content-Length") {
    FrameReader reader;
    reader.feed("Content-Type: x\r\n\r\n" + encode_frame("ok"));
    auto events = drain(reader);
    REQUIRE(events.size() == 2);
    CHECK(events[0].kind == FrameEvent::Kind::BadHeader);
    CHECK_THAT(events[0].error, Catch::Contains("no Content-Length"));
    CHECK(events[1].body == "ok");
  }
  SECTION("a line without a colon, then garbage, then a good frame in pieces") {
    FrameReader reader;
    reader.feed("hello there\r\n\r\nmore garbage {\"x\": 1}\r\n");
    reader.feed("Content-Len");
    reader.feed("gth: 4\r\n\r\nnull");
    auto events = drain(reader);
    REQUIRE(events.size() == 2);
    CHECK(events[0].kind == FrameEvent::Kind::BadHeader);
    CHECK(events[1].body == "null");
  }
  SECTION("a bad header's body is skipped and the frame right after it is kept") {
    FrameReader reader;
    std::string stream = "Content-Length: 7x\r\n\r\n{\"a\":1}" + encode_frame("{\"b\":2}") + encode_frame("3");
    for (size_t at = 0; at < stream.size(); at += 5) reader.feed(std::string_view(stream).substr(at, 5));
    auto events = drain(reader);
    REQUIRE(events.size() == 3);
    CHECK(events[0].kind == FrameEvent::Kind::BadHeader);
    CHECK(bodies({events[1], events[2]}) == std::vector<std::string>{"{\"b\":2}", "3"});
  }
  SECTION("an endless header line is cut off at the header limit") {
    FrameReader reader;
    reader.feed(std::string(FrameReader::kMaxHeaderBytes + 10, 'x'));
    auto events = drain(reader);
    REQUIRE(events.size() == 1);
    CHECK(events[0].kind == FrameEvent::Kind::BadHeader);
    reader.feed("\r\n" + encode_frame("ok"));
    CHECK(bodies(drain(reader)) == std::vector<std::string>{"ok"});
  }
}

TEST_CASE("an oversize frame is discarded and the stream stays usable", "[protocol][framing]") {
  FrameReader reader(16);
  const std::string big(100, 'x');
  SECTION("in one feed") {
    reader.feed(encode_frame(big) + encode_frame("small"));
  }
  SECTION("body arriving in pieces") {
    std::string stream = encode_frame(big) + encode_frame("small");
    for (size_t at = 0; at < stream.size(); at += 7) reader.feed(std::string_view(stream).substr(at, 7));
  }
  auto events = drain(reader);
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind == FrameEvent::Kind::Oversize);
  CHECK_THAT(events[0].error, Catch::Contains("100 bytes"));
  CHECK(events[1].kind == FrameEvent::Kind::Message);
  CHECK(events[1].body == "small");
}

TEST_CASE("encode_frame writes the LSP header", "[protocol][framing]") {
  CHECK(encode_frame("{}") == "Content-Length: 2\r\n\r\n{}");
  CHECK(encode_frame("é") == "Content-Length: 2\r\n\r\né");
}
