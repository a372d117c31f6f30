// What the REPL does with input that is odd or hostile (issue 61): files that are not regular,
// escapes in text it prints, duplicated arguments, unclosed quotes, a tune that finds nothing.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "repl/format.h"
#include "repl/repl_fixture.h"
#include "support/subprocess.h"

using prism::test::example;
using prism::test::ReplFixture;

namespace {

// No raw ESC and no C1 CSI in what the REPL printed.
bool has_raw_escape(const std::string& text) {
  return text.find('\x1b') != std::string::npos || text.find("\xc2\x9b") != std::string::npos;
}

// `command PATH` on a directory, a FIFO, a device and a missing file: each refused at once (a
// FIFO must not hang, /dev/zero must not be read), saying what the path is.
void check_refuses_what_is_not_a_file(const ReplFixture& f, const std::string& command) {
  const std::string dir = f.dir() / (command.substr(0, 2) + "-things");
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir, "not a regular file (a directory)"}, {fifo, "not a regular file (a FIFO)"},
      {"/dev/zero", "not a regular file (a device)"}, {dir + "/none", "none"}};
  for (const auto& [path, words] : cases) {
    auto r = f.prism({"-c", command + " " + path});
    INFO(command << " " << path << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains(words));
  }
}

}  // namespace

TEST_CASE("visible_text writes control characters and stray bytes as escapes", "[repl][security]") {
  using prism::repl::visible_text;
  CHECK(visible_text("plain ± text\n\tnext") == "plain ± text\n\tnext");
  CHECK(visible_text("a\x1b[31mred\x1b]0;title\x07") == "a\\x1b[31mred\\x1b]0;title\\x07");
  CHECK(visible_text("cr\rback\bdel\x7f") == "cr\\x0dback\\x08del\\x7f");
  CHECK(visible_text("c1 \xc2\x9b" "2J") == "c1 \\u009b2J");      // U+009B, a CSI
  CHECK(visible_text("raw \x9b" "2J \xff") == "raw \\x9b2J \\xff");  // not UTF-8
  CHECK(visible_text("cut \xe2\x82") == "cut \\xe2\\x82");           // a sequence cut short
}

TEST_CASE("db import reads only a regular file and says why not otherwise", "[repl][security]") {
  ReplFixture f;
  check_refuses_what_is_not_a_file(f, "db import");
}

TEST_CASE("open of a directory, a FIFO or a device says what it is", "[repl][security]") {
  ReplFixture f;
  check_refuses_what_is_not_a_file(f, "open");
  CHECK_THAT(f.prism({"-c", "open " + f.dir() / "none.prism"}).err, Catch::Contains("no such file"));
}

TEST_CASE("escapes in a command and in a daemon's answer reach the terminal as text", "[repl][security]") {
  ReplFixture f;
  // The REPL's own input echoed in an error.
  auto typed = f.prism({"-c", "frob\x1b[31m\x07nicate"});
  CHECK(typed.exit_code == 1);
  CHECK_FALSE(has_raw_escape(typed.err));
  CHECK_THAT(typed.err, Catch::Contains("frob\\x1b[31m\\x07nicate"));
  // A file name with an escape, in a daemon's error and in the REPL's.
  const std::string odd = f.dir() / "odd\x1b[2Jname.prism";
  auto missing = f.prism({"-c", "open \"" + odd + "\""});
  CHECK(missing.exit_code == 1);
  CHECK_FALSE(has_raw_escape(missing.err));
  // A program that prints its name in every answer: escapes cannot be in a name, but a file's
  // comment lines are echoed in diagnostics.
  const std::string bad = f.dir() / "bad.prism";
  std::ofstream(bad) << "# \x1b[31mred\xc2\x9b" "2J\nprogram p(X: f32[n]) {\n  return frob(X) \x1b[0m\n}\n";
  auto diagnosed = f.prism({"-c", "open " + bad});
  CHECK(diagnosed.exit_code == 1);
  CHECK_FALSE(has_raw_escape(diagnosed.err));
  CHECK_FALSE(has_raw_escape(diagnosed.out));
}

TEST_CASE("a dim, a flag or a target given twice is an error, not the last one silently", "[repl][errors]") {
  ReplFixture f;
  const std::string open = "open " + example("rms_linear") + "; ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run rms_linear n=8 n=9 d=16", "n given twice"},
      {"tune rms_linear n=8 d=16 d=32", "d given twice"},
      {"tune rms_linear n=8 d=16 --top 2 --top 3", "--top given twice"},
      {"code rms_linear n=8 d=16 --target cpu --target cuda", "--target given twice"}};
  for (const auto& [command, words] : cases) {
    auto r = f.prism({"-c", open + command});
    INFO(command << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains(words));
  }
}

TEST_CASE("an unterminated quote is an error at the quote, not an unknown command", "[repl][errors]") {
  ReplFixture f;
  auto r = f.prism({"-c", "open \"examples/rms_linear.prism"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("unterminated quote") && Catch::Contains("-c:1:6:"));
  CHECK_THAT(r.err, !Catch::Contains("unknown command"));
  auto first = f.prism({"-c", "\"open examples/rms_linear.prism"});
  CHECK(first.exit_code == 1);
  CHECK_THAT(first.err, Catch::Contains("unterminated quote") && !Catch::Contains("unknown command"));
}

TEST_CASE("a script's tune where no kernel passes its check prints its table and exits 1", "[repl][tune][errors]") {
  ReplFixture f;
  f.extra_env["PRISM_FAULT_INJECT"] = "crash@1,crash@2,crash@3,crash@4";  // every kernel timed crashes
  auto r = f.prism({"-c", "open " + example("rms_linear") + "; tune rms_linear n=4 d=64 --top 2 --fresh"});
  INFO(r.out << r.err);
  CHECK_THAT(r.out, Catch::Contains("no candidate passed its check"));  // the table is printed
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("no kernel of 'rms_linear' passed its check at d=64 n=4 on the CPU"));
}
