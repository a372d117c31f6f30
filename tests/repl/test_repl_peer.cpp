// The REPL talks only to its own user's daemon (issue 46, 6): a server of another user on the
// socket gets nothing, and a same-user server that answers oddly is an error in words.
#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "support/subprocess.h"

using prism::test::bin;
using prism::test::TempDir;

namespace {

int listen_unix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  REQUIRE(fd >= 0);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

// Accepts one client within `seconds` and returns every byte it sent until it closed; answers
// its first message with `reply` (a whole frame) when that is not empty.
std::string serve_one(int listener, const std::string& reply, int seconds) {
  pollfd p{listener, POLLIN, 0};
  if (::poll(&p, 1, seconds * 1000) <= 0) return "";
  const int client = ::accept(listener, nullptr, nullptr);
  std::string got;
  char buf[4096];
  bool answered = false;
  for (pollfd c{client, POLLIN, 0}; ::poll(&c, 1, seconds * 1000) > 0;) {
    const ssize_t n = ::read(client, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, size_t(n));
    if (!answered && !reply.empty() && got.find("\r\n\r\n") != std::string::npos) {
      answered = ::write(client, reply.data(), reply.size()) == ssize_t(reply.size());
    }
  }
  ::close(client);
  return got;
}

std::string frame(const std::string& body) { return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body; }

}  // namespace

TEST_CASE("the REPL refuses a server of another user on its socket and sends it nothing", "[repl][security]") {
  // Only root can run a process as another user here; elsewhere the peer check is the same code.
  if (::geteuid() != 0) return;
  TempDir dir;
  const std::string path = dir / "prismd.sock";
  const int listener = listen_unix(path);
  int report[2], ready[2];
  REQUIRE(::pipe(report) == 0);
  REQUIRE(::pipe(ready) == 0);
  const pid_t server = ::fork();
  REQUIRE(server >= 0);
  if (server == 0) {
    // SO_PEERCRED gives a client the credentials the server had when it called listen().
    if (::setgid(65534) != 0 || ::setuid(65534) != 0 || ::listen(listener, 4) != 0) ::_exit(2);
    const char listening = 1;  // the clients below must not connect before this listen()
    if (::write(ready[1], &listening, 1) != 1) ::_exit(4);
    size_t n = 0;  // bytes from both clients below
    for (int client = 0; client < 2; ++client) n += serve_one(listener, frame(R"({"jsonrpc":"2.0","id":1,"result":"odd"})"), 20).size();
    ::_exit(::write(report[1], &n, sizeof n) == sizeof n ? 0 : 3);
  }
  ::close(report[1]);
  ::close(ready[1]);
  char listening = 0;
  REQUIRE(::read(ready[0], &listening, 1) == 1);  // a busy machine can delay the child's listen()
  ::close(ready[0]);
  const auto r = prism::test::run_process({bin("prism"), "--socket", path, "--no-start", "-c", "programs"});
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Catch::Contains("refusing the server at " + path + ": it runs as uid 65534, not as you (uid 0)"));
  // With autostart the REPL does not start a daemon in its place either.
  const auto again = prism::test::run_process({bin("prism"), "--socket", path, "-c", "programs"});
  CHECK(again.exit_code == 3);
  CHECK_THAT(again.err, Catch::Contains("refusing the server"));
  size_t received = 99;
  REQUIRE(::read(report[0], &received, sizeof received) == sizeof received);
  CHECK(received == 0);
  int status = 0;
  ::waitpid(server, &status, 0);
  ::close(report[0]);
  ::close(listener);
}

TEST_CASE("a server that answers initialize oddly is an error in words, not a JSON exception", "[repl][security]") {
  TempDir dir;
  const std::string path = dir / "prismd.sock";
  const int listener = listen_unix(path);
  REQUIRE(::listen(listener, 4) == 0);
  std::string got;
  std::thread server([&] { got = serve_one(listener, frame(R"({"jsonrpc":"2.0","id":1,"result":"odd"})"), 10); });
  const auto r = prism::test::run_process({bin("prism"), "--socket", path, "--no-start", "-c", "programs"});
  server.join();
  ::close(listener);
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Catch::Contains("did not answer `initialize` as prismd does"));
  CHECK_THAT(r.err, !Catch::Contains("json.exception"));
  // It heard initialize and nothing after it.
  CHECK_THAT(got, Catch::Contains("\"initialize\""));
  CHECK_THAT(got, !Catch::Contains("program/list"));
}
