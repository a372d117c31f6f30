// Position conversion (UTF-16 vs UTF-8, engine SourcePos) and LSP content changes.
#include <catch2/catch.hpp>

#include "protocol/text_edits.h"
#include "protocol/uri.h"

using namespace prism::protocol;

namespace {
TextChange edit(int64_t l0, int64_t c0, int64_t l1, int64_t c1, std::string text) {
  return TextChange{Range{{l0, c0}, {l1, c1}}, std::move(text)};
}

// Field named by the InvalidParams an apply_changes call throws.
std::string failing_field(const std::string& text, const std::vector<TextChange>& changes, PositionEncoding enc) {
  try {
    apply_changes(text, changes, enc);
  } catch (const RpcFailure& e) {
    CHECK(e.code() == kInvalidParams);
    return e.data().at("field").get<std::string>();
  }
  return "";
}
}  // namespace

// "é" is 2 bytes / 1 UTF-16 unit; "😀" (U+1F600) is 4 bytes / 2 UTF-16 units.
const std::string kText = "a\xC3\xA9" "b\n\xF0\x9F\x98\x80x\r\ny";

TEST_CASE("LineIndex maps positions in both encodings", "[protocol][positions]") {
  LineIndex index(kText);
  REQUIRE(index.line_count() == 3);
  CHECK(index.offset({0, 2}, PositionEncoding::Utf16) == 3u);  // after "aé"
  CHECK(index.offset({0, 3}, PositionEncoding::Utf8) == 3u);
  CHECK(index.offset({0, 3}, PositionEncoding::Utf16) == 4u);  // end of line 0
  CHECK(index.offset({1, 2}, PositionEncoding::Utf16) == 9u);  // after the emoji
  CHECK(index.offset({1, 4}, PositionEncoding::Utf8) == 9u);
  CHECK(index.offset({1, 3}, PositionEncoding::Utf16) == 10u);  // after "x", before "\r\n"
  CHECK(index.offset({2, 1}, PositionEncoding::Utf16) == kText.size());

  SECTION("positions outside the text or inside a character are rejected") {
    CHECK_FALSE(index.offset({0, 5}, PositionEncoding::Utf16));  // past the line
    CHECK_FALSE(index.offset({1, 4}, PositionEncoding::Utf16));  // "\r" is not a character of the line
    CHECK_FALSE(index.offset({3, 0}, PositionEncoding::Utf16));  // no line 3
    CHECK_FALSE(index.offset({1, 1}, PositionEncoding::Utf16));  // between surrogates
    CHECK_FALSE(index.offset({0, 2}, PositionEncoding::Utf8));   // inside "é"
    CHECK_FALSE(index.offset({-1, 0}, PositionEncoding::Utf8));
  }
  SECTION("byte offsets back to positions") {
    CHECK(index.position(3, PositionEncoding::Utf16) == Position{0, 2});
    CHECK(index.position(9, PositionEncoding::Utf16) == Position{1, 2});
    CHECK(index.position(9, PositionEncoding::Utf8) == Position{1, 4});
    CHECK(index.position(1000, PositionEncoding::Utf16) == Position{2, 1});
  }
  SECTION("engine SourcePos: 1-based line, 1-based byte column") {
    CHECK(index.from_source({1, 4}, PositionEncoding::Utf16) == Position{0, 2});  // "b"
    CHECK(index.from_source({1, 4}, PositionEncoding::Utf8) == Position{0, 3});
    CHECK(index.from_source({2, 5}, PositionEncoding::Utf16) == Position{1, 2});  // "x"
    CHECK(index.from_source({2, 99}, PositionEncoding::Utf16) == Position{1, 3});  // clamped to the line
    CHECK(index.from_source({9, 1}, PositionEncoding::Utf16) == Position{2, 1});   // clamped to the end
  }
}

TEST_CASE("content changes apply in order", "[protocol][edits]") {
  SECTION("insert after non-ASCII text, UTF-16 positions") {
    CHECK(apply_changes(kText, {edit(1, 2, 1, 2, "!")}, PositionEncoding::Utf16) ==
          "a\xC3\xA9" "b\n\xF0\x9F\x98\x80!x\r\ny");
  }
  SECTION("the same edit in UTF-8 positions") {
    CHECK(apply_changes(kText, {edit(1, 4, 1, 4, "!")}, PositionEncoding::Utf8) ==
          "a\xC3\xA9" "b\n\xF0\x9F\x98\x80!x\r\ny");
  }
  SECTION("replace a non-ASCII character") {
    CHECK(apply_changes(kText, {edit(0, 1, 0, 2, "e")}, PositionEncoding::Utf16) == "aeb\n\xF0\x9F\x98\x80x\r\ny");
    CHECK(apply_changes(kText, {edit(0, 1, 0, 3, "e")}, PositionEncoding::Utf8) == "aeb\n\xF0\x9F\x98\x80x\r\ny");
  }
  SECTION("several edits, each against the previous result") {
    std::string text = "abc\ndef\n";
    auto out = apply_changes(text,
                             {edit(0, 0, 0, 1, "X"),        // Xbc
                              edit(1, 0, 2, 0, ""),         // delete line 1
                              edit(0, 3, 0, 3, "\nnew"),    // Xbc\nnew\n
                              edit(1, 3, 1, 3, "!")},
                             PositionEncoding::Utf16);
    CHECK(out == "Xbc\nnew!\n");
  }
  SECTION("a change without a range replaces the whole text; later ranges refer to it") {
    CHECK(apply_changes("old", {TextChange{std::nullopt, "new text"}, edit(0, 3, 0, 3, "!")},
                        PositionEncoding::Utf16) == "new! text");
  }
  SECTION("appending at the end of the text") {
    CHECK(apply_changes("ab\n", {edit(1, 0, 1, 0, "c")}, PositionEncoding::Utf16) == "ab\nc");
  }
}

TEST_CASE("out-of-range ranges are InvalidParams naming the change", "[protocol][edits]") {
  CHECK(failing_field("abc", {edit(0, 4, 0, 4, "x")}, PositionEncoding::Utf16) == "changes[0].range.start");
  CHECK(failing_field("abc", {edit(0, 0, 1, 0, "x")}, PositionEncoding::Utf16) == "changes[0].range.end");
  CHECK(failing_field("abc", {edit(0, 0, 0, 1, ""), edit(0, 2, 0, 3, "")}, PositionEncoding::Utf16) ==
        "changes[1].range.end");
  CHECK(failing_field("abc", {edit(0, 2, 0, 1, "x")}, PositionEncoding::Utf16) == "changes[0].range");
  CHECK(failing_field(kText, {edit(1, 1, 1, 2, "")}, PositionEncoding::Utf16) == "changes[0].range.start");
}

TEST_CASE("parse_changes validates the JSON shape", "[protocol][edits]") {
  auto field_of = [](const json& changes) {
    try {
      parse_changes(changes);
    } catch (const RpcFailure& e) {
      return e.data().at("field").get<std::string>();
    }
    return std::string();
  };
  CHECK(field_of(json::parse(R"([{"text": 1}])")) == "changes[0].text");
  CHECK(field_of(json::parse(R"([{"text": ""}, 7])")) == "changes[1]");
  CHECK(field_of(json::parse(R"([{"text": "", "range": {"start": {"line": 0, "character": 0}}}])")) ==
        "changes[0].range.end");
  CHECK(field_of(json::parse(R"([{"text": "", "range": {"start": {"line": 0, "character": "a"},
                                  "end": {"line": 0, "character": 0}}}])")) == "changes[0].range.start.character");
  auto ok = parse_changes(json::parse(R"([{"text": "x", "range": {"start": {"line": 1, "character": 2},
                                            "end": {"line": 3, "character": 4}}}, {"text": "y"}])"));
  REQUIRE(ok.size() == 2);
  CHECK(ok[0].range == Range{{1, 2}, {3, 4}});
  CHECK_FALSE(ok[1].range);
}

TEST_CASE("document names: paths become file URIs, URIs stay verbatim", "[protocol][uri]") {
  CHECK(document_uri("/tmp/a b/x.prism") == "file:///tmp/a%20b/x.prism");
  CHECK(document_uri("file:///tmp/a%20b/x.prism") == "file:///tmp/a%20b/x.prism");
  CHECK(document_uri("untitled:1") == "untitled:1");
  CHECK(local_path("file:///tmp/a%20b/x.prism") == std::optional<std::string>("/tmp/a b/x.prism"));
  CHECK(local_path("file://localhost/etc/x") == std::optional<std::string>("/etc/x"));
  CHECK(local_path("/plain/path") == std::optional<std::string>("/plain/path"));
  CHECK_FALSE(local_path("file://otherhost/x"));
  CHECK_FALSE(local_path("untitled:1"));
}
