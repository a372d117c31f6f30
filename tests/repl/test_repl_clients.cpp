// Two REPL clients on one daemon (issue 14): announcements of replaced programs, `close` of any
// typed program, typed blocks that do not compile, a daemon that goes away, and the idle exit of
// a daemon the REPL started.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "repl/repl_fixture.h"

using nlohmann::json;
using prism::test::example;
using prism::test::json_lines;
using prism::test::ReplFixture;

namespace {

const std::string kTyped = "program scaled(X: f32[n]) {\n  return X * 2\n}";
const std::string kRetyped = "program scaled(X: f32[n]) {\n  return X * 3\n}";

// A REPL that reads its commands from a FIFO, so that a test can act between its commands.
class SlowRepl {
 public:
  SlowRepl(const ReplFixture& f, const std::string& name, std::vector<std::string> args = {}) : fifo_(f.dir() / name) {
    REQUIRE(::mkfifo(fifo_.c_str(), 0600) == 0);
    std::string cmd = "exec \"$0\" --socket \"$1\"";
    for (const auto& a : args) cmd += " " + a;
    cmd += " < \"$2\"";
    result_ = std::async(std::launch::async, [&f, cmd, this] {
      return prism::test::run_process({"sh", "-c", cmd, prism::test::bin("prism"), f.socket(), fifo_}, "", f.env(), std::chrono::seconds(120));
    });
    in_.open(fifo_);
  }
  void send(const std::string& line) { in_ << line << std::endl; }
  prism::ProcessResult finish() {
    in_.close();
    return result_.get();
  }

 private:
  std::string fifo_;
  std::future<prism::ProcessResult> result_;
  std::ofstream in_;
};

// Waits (up to 20 s) until the daemon lists program `name`.
bool wait_for_program(const ReplFixture& f, const std::string& name) {
  for (int i = 0; i < 200; ++i) {
    auto r = f.prism({"--no-start", "--json", "-c", "programs"});
    const std::vector<json> lines = r.exit_code == 0 ? json_lines(r.out) : std::vector<json>{};  // kept alive for the loop
    if (!lines.empty())
      for (const auto& p : lines[0]["programs"])
        if (p.value("name", "") == name) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Waits (up to 20 s) until `clients` clients are connected, the one asking included.
bool wait_for_clients(const ReplFixture& f, int clients) {
  for (int i = 0; i < 200; ++i) {
    auto r = f.prism({"--no-start", "--json", "-c", "daemon status"});
    if (r.exit_code == 0 && json_lines(r.out).at(0).value("clients", 0) >= clients) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

int64_t daemon_pid(const ReplFixture& f) {
  auto r = f.prism({"--no-start", "--json", "-c", "daemon status"});
  if (r.exit_code != 0) return 0;
  return json_lines(r.out).at(0).value("pid", int64_t{0});
}

}  // namespace

TEST_CASE("a program typed at another prompt replaces this client's, and this client is told", "[repl][e2e][clients]") {
  ReplFixture f;
  REQUIRE(f.prism({"-c", "programs"}).exit_code == 0);  // the daemon runs
  SlowRepl a(f, "a.in");
  a.send(kTyped);
  REQUIRE(wait_for_program(f, "scaled"));  // A's definition has landed
  REQUIRE(f.prism({}, kRetyped + "\n").exit_code == 0);  // client B
  a.send("run scaled n=2");
  auto r = a.finish();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("note: scaled was replaced by another client's definition (typed at another prompt)"));
  CHECK_THAT(r.out, Catch::Contains("f32[2]"));
}

TEST_CASE("close works for a program typed in an earlier session; a broken block is not kept", "[repl][e2e][clients]") {
  ReplFixture f;
  REQUIRE(f.prism({}, kTyped + "\n").exit_code == 0);
  auto closed = f.prism({"-c", "close scaled; programs"});
  INFO(closed.err);
  REQUIRE(closed.exit_code == 0);
  CHECK_THAT(closed.out, Catch::StartsWith("closed scaled\n"));
  CHECK(closed.out.find("scaled", closed.out.find('\n')) == std::string::npos);  // listed no more

  // A block that does not compile: reported, and the previous definition stays.
  REQUIRE(f.prism({}, kTyped + "\n").exit_code == 0);
  auto broken = f.prism({}, "program scaled(X: f32[n]) {\n  return nope(X)\n}\n");
  CHECK(broken.exit_code == 1);
  CHECK_THAT(broken.err, Catch::Contains("not kept (the previous definition stays)"));
  auto after = f.prism({"--json", "-c", "programs; run scaled n=2"});
  INFO(after.err);
  REQUIRE(after.exit_code == 0);
  CHECK(json_lines(after.out)[0]["programs"].size() == 1);
  auto fresh = f.prism({}, "program other(X: f32[n]) {\n  return nope(X)\n}\n");
  CHECK(fresh.exit_code == 1);
  CHECK(json_lines(f.prism({"--json", "-c", "programs"}).out)[0]["programs"].size() == 1);
}

TEST_CASE("when the daemon goes away, the REPL connects to a new one and says so", "[repl][e2e][clients]") {
  ReplFixture f;
  REQUIRE(f.prism({"-c", "open " + example("rms_linear")}).exit_code == 0);
  const int64_t first = daemon_pid(f);
  REQUIRE(first > 0);
  SlowRepl a(f, "a.in");
  a.send("programs");
  REQUIRE(wait_for_clients(f, 2));  // A is connected
  REQUIRE(f.prism({"--no-start", "-c", "daemon stop"}).exit_code == 0);  // client B stops it
  // Until it has exited (on a loaded machine, more than 5 s has been seen): else it would serve A.
  for (int i = 0; i < 600 && ::kill(pid_t(first), 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(::kill(pid_t(first), 0) != 0);
  a.send("run rms_linear n=2 d=8");
  auto r = a.finish();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("prismd (pid " + std::to_string(first) + ") went away; connected to prismd (pid "));
  CHECK_THAT(r.out, Catch::Contains("f16[2, 8]"));  // the program came back with the new daemon
  CHECK(daemon_pid(f) != first);
}

TEST_CASE("a daemon the REPL started exits once idle, keeping its state on disk", "[repl][e2e][clients]") {
  ReplFixture f;
  f.extra_env["PRISM_IDLE_EXIT"] = "1";
  REQUIRE(f.prism({"-c", "open " + example("rms_linear")}).exit_code == 0);
  const int64_t pid = daemon_pid(f);
  REQUIRE(pid > 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::kill(pid_t(pid), 0) != 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(gone);
  // The next REPL starts a daemon that has the program.
  auto r = f.prism({"-c", "programs"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("rms_linear"));
}
