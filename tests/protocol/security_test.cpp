// Only the daemon's user acts on the daemon (issue 17, D3): TCP clients present the token, the Unix
// socket is 0600 and checks its peer's uid, and a second local user (uid 65534, through setpriv
// when the tests run as root) can neither connect, nor read the token, nor stop the daemon.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "prismd_process.h"
#include "repl/client.h"
#include "tests_common.h"

using namespace prism::test;
using prism::repl::Client;
using prism::repl::ConnectionError;
using prism::repl::RpcError;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr auto kTimeout = std::chrono::milliseconds(20000);

int tcp_port(const std::string& ready_line) {
  auto at = ready_line.find("tcp:127.0.0.1:");
  REQUIRE(at != std::string::npos);
  return std::stoi(ready_line.substr(at + 14));
}

// The TCP port of a daemon started with --listen tcp:127.0.0.1:0, once it is ready.
int ready_tcp_port(Prismd& daemon) {
  auto ready = daemon.wait_ready();
  REQUIRE(ready);
  return tcp_port(*ready);
}

// The error code of `initialize` with these options, and whether the daemon then closed the
// connection.
std::pair<int, bool> try_initialize(int port, const json& initialization_options) {
  auto client = Client::connect_tcp("127.0.0.1", port);
  json params = {{"capabilities", json::object()}};
  if (!initialization_options.is_null()) params["initializationOptions"] = initialization_options;
  int code = 0;
  try {
    client->request("initialize", params, kTimeout);
  } catch (const RpcError& e) {
    code = e.code();
  }
  bool closed = false;
  try {
    client->request("daemon/status", json::object(), 5s);
  } catch (const ConnectionError&) {
    closed = true;
  } catch (const RpcError&) {}
  return {code, closed};
}

// The daemon's log once it holds `text` (its stderr is collected by a thread), or after 5 s.
std::string log_with(Prismd& daemon, const std::string& text) {
  for (int i = 0; i < 100 && daemon.stderr_text().find(text) == std::string::npos; ++i) std::this_thread::sleep_for(50ms);
  return daemon.stderr_text();
}

// A bare TCP connection to the daemon, for bytes no Client would send. Closed with the object.
class RawTcp {
 public:
  explicit RawTcp(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(static_cast<uint16_t>(port));
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
  }
  ~RawTcp() { ::close(fd_); }
  RawTcp(const RawTcp&) = delete;
  RawTcp& operator=(const RawTcp&) = delete;
  void send(const std::string& bytes) {
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;  // closed by the daemon: what the caller checks next
      done += size_t(n);
    }
  }
  // What the daemon sends until it closes the connection; nullopt when it is still open after `timeout`.
  std::optional<std::string> until_closed(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, int(left.count())) <= 0) continue;
      char chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) return received_;
      received_.append(chunk, size_t(n));
    }
  }

 private:
  int fd_;
  std::string received_;
};

// A client written in Python, run as another user: prints one line per probe.
const char* kOtherUser = R"PY(
import json, socket, sys
def frame(obj):
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
def reply(s):
    s.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk: return None
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    n = int(head.split(b":")[1])
    while len(rest) < n:
        chunk = s.recv(65536)
        if not chunk: return None
        rest += chunk
    return json.loads(rest[:n])
def closed(s):
    s.settimeout(10)
    try: return s.recv(1) == b""
    except OSError: return True
unix_path, port, token_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    u = socket.socket(socket.AF_UNIX); u.connect(unix_path)
    try:
        u.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
        r = reply(u)
        print("unix", "closed" if r is None else "answered")
    except OSError:
        print("unix", "closed")
except OSError as e:
    print("unix", "refused", e.errno)
try:
    open(token_file).read(); print("token", "read")
except OSError as e:
    print("token", "denied", e.errno)
t = socket.create_connection(("127.0.0.1", port))
t.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "daemon/stop"}))
r = reply(t)
print("stop", r["error"]["code"] if r and "error" in r else "accepted", "closed" if closed(t) else "open")
t = socket.create_connection(("127.0.0.1", port))
t.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"initializationOptions": {"token": "0" * 64}}}))
r = reply(t)
print("guess", r["error"]["code"] if r and "error" in r else "accepted", "closed" if closed(t) else "open")
)PY";

}  // namespace

TEST_CASE("a TCP client must present the daemon's token", "[protocol][daemon][security]") {
  TempDir dir;
  Prismd daemon({"--socket", dir.socket(), "--listen", "tcp:127.0.0.1:0"});
  const int port = ready_tcp_port(daemon);
  std::string token;
  std::ifstream(dir / ("tcp-" + std::to_string(port) + ".token")) >> token;
  REQUIRE(token.size() == 64);

  CHECK(try_initialize(port, nullptr) == std::pair{-32000, true});
  CHECK(try_initialize(port, {{"token", std::string(64, '0')}}) == std::pair{-32000, true});
  CHECK(try_initialize(port, {{"token", token.substr(0, 63)}}) == std::pair{-32000, true});
  CHECK(try_initialize(port, {{"token", 42}}) == std::pair{-32000, true});
  CHECK(try_initialize(port, {{"token", token}}) == std::pair{0, false});

  // Anything but initialize first: answered, then the connection is closed; the daemon stays.
  auto rude = Client::connect_tcp("127.0.0.1", port);
  try {
    rude->request("daemon/stop", json::object(), kTimeout);
    FAIL("daemon/stop was accepted without the token");
  } catch (const RpcError& e) {
    CHECK(e.code() == -32002);
  }
  CHECK_THROWS_AS(rude->request("daemon/status", json::object(), 5s), ConnectionError);
  CHECK_FALSE(daemon.wait_exit(0ms));
  CHECK_THAT(daemon.stderr_text(), Catch::Contains("closed: not authenticated"));

  // The Unix socket's own user needs no token.
  auto local = Client::connect_unix(dir.socket());
  CHECK(local->request("initialize", {{"capabilities", json::object()}}, kTimeout).contains("capabilities"));
}

TEST_CASE("the socket and the token file are private whatever the umask", "[protocol][daemon][security]") {
  TempDir dir;
  const mode_t old_umask = ::umask(0);
  Prismd daemon({"--socket", dir.socket(), "--listen", "tcp:127.0.0.1:0"});
  ::umask(old_umask);
  auto ready = daemon.wait_ready();
  REQUIRE(ready);
  struct stat st {};
  REQUIRE(::lstat(dir.socket().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  std::string token_file = dir / ("tcp-" + std::to_string(tcp_port(*ready)) + ".token");
  REQUIRE(::lstat(token_file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  // Gone with the daemon.
  auto client = Client::connect_unix(dir.socket());
  client->request("initialize", {{"capabilities", json::object()}}, kTimeout);
  client->request("daemon/stop", json::object(), kTimeout);
  REQUIRE(daemon.wait_exit() == 0);
  CHECK_FALSE(std::filesystem::exists(token_file));
}

TEST_CASE("the token file: --token-file leaves its directory as it was, refuses one others can write, and a failed start leaves none", "[protocol][daemon][security]") {
  // Issue 46, 8: the token file's directory was chmod'ed 0700 (`--token-file ~/x.token` would do
  // it to `~`), and a daemon that failed to start left its token file behind.
  TempDir dir, home, shared;
  std::filesystem::permissions(home.path(), std::filesystem::perms(0755));
  Prismd daemon({"--socket", dir.socket(), "--listen", "tcp:127.0.0.1:0", "--token-file", home / "x.token"});
  REQUIRE(daemon.wait_ready());
  struct stat st {};
  REQUIRE(::stat(home.path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0755);
  REQUIRE(::lstat((home / "x.token").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  // A second daemon on the same socket fails after writing its token: the token goes with it.
  Prismd second({"--socket", dir.socket(), "--listen", "tcp:127.0.0.1:0", "--token-file", home / "y.token"});
  CHECK(second.wait_exit().value_or(0) != 0);
  CHECK_FALSE(std::filesystem::exists(home / "y.token"));
  CHECK(std::filesystem::exists(home / "x.token"));

  // A directory others can write is refused, and left as it was.
  std::filesystem::permissions(shared.path(), std::filesystem::perms(0777));
  TempDir other;
  Prismd third({"--socket", other.socket(), "--listen", "tcp:127.0.0.1:0", "--token-file", shared / "z.token"});
  CHECK(third.wait_exit().value_or(0) != 0);
  CHECK_THAT(third.stderr_text(), Catch::Contains("cannot keep the TCP token private") && Catch::Contains("writable by other users"));
  CHECK_FALSE(std::filesystem::exists(shared / "z.token"));
  REQUIRE(::stat(shared.path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0777);
}

TEST_CASE("a second local user can neither connect, nor read the token, nor stop the daemon", "[protocol][daemon][security][second-user]") {
  if (::geteuid() != 0 || ::access("/usr/bin/setpriv", X_OK) != 0 || ::access("/usr/bin/python3", X_OK) != 0) {
    WARN("skipped: needs root, setpriv and python3 to act as a second user");
    return;
  }
  TempDir dir;
  Prismd daemon({"--socket", dir.socket(), "--listen", "tcp:127.0.0.1:0"});
  const int port = ready_tcp_port(daemon);
  const std::string token_file = dir / ("tcp-" + std::to_string(port) + ".token");
  const std::vector<std::string> as_nobody = {
      "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", kOtherUser};
  auto probe = [&] {
    std::vector<std::string> argv = as_nobody;
    argv.insert(argv.end(), {dir.socket(), std::to_string(port), token_file});
    ProcessResult r = run_process(argv, "", {}, std::chrono::seconds(60));
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
  };

  SECTION("with the directories as prismd makes them (0700)") {
    std::string out = probe();
    CHECK_THAT(out, Catch::Contains("unix refused 13"));  // EACCES
    CHECK_THAT(out, Catch::Contains("token denied 13"));
    CHECK_THAT(out, Catch::Contains("stop -32002 closed"));
    CHECK_THAT(out, Catch::Contains("guess -32000 closed"));
  }
  SECTION("with the socket opened to everyone by hand, the peer's uid is still refused") {
    std::filesystem::permissions(
        dir.path(), std::filesystem::perms::owner_all | std::filesystem::perms::others_exec | std::filesystem::perms::group_exec);
    std::filesystem::permissions(dir.socket(), std::filesystem::perms::all);
    std::string out = probe();
    CHECK_THAT(out, Catch::Contains("unix closed"));
    CHECK_THAT(out, Catch::Contains("token denied 13"));
    CHECK_THAT(daemon.stderr_text(), Catch::Contains("refused a Unix socket peer of uid 65534"));
  }
  // The owner's daemon served through it all.
  CHECK_FALSE(daemon.wait_exit(0ms));
  auto client = Client::connect_unix(dir.socket());
  client->request("initialize", {{"capabilities", json::object()}}, kTimeout);
  CHECK(client->request("daemon/status", json::object(), kTimeout)["clients"] == 1);
}

TEST_CASE("the REPL reaches a daemon's TCP listener with the token it wrote", "[protocol][daemon][security][repl]") {
  TempDir dir;
  Prismd daemon({"--socket", dir.socket(), "--listen", "tcp:127.0.0.1:0"});
  const int port = ready_tcp_port(daemon);
  const std::string tcp = "tcp:127.0.0.1:" + std::to_string(port);
  auto prism_with = [&](const std::string& token_file) {
    return prism::run_process({bin("prism"), "--socket", tcp, "-c", "programs"}, "", {{"PRISM_TOKEN_FILE", token_file}});
  };
  auto ok = prism_with(dir / ("tcp-" + std::to_string(port) + ".token"));
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("no programs are open"));
  auto missing = prism_with(dir / "nope.token");
  CHECK(missing.exit_code != 0);
  CHECK_THAT(missing.err, Catch::Contains("cannot read the daemon's TCP token from " + dir / "nope.token"));
  {
    std::ofstream wrong(dir / "wrong.token");
    wrong << std::string(64, '0') << "\n";
  }
  auto refused = prism_with(dir / "wrong.token");
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.err, Catch::Contains("wrong token"));
}

TEST_CASE("before its token a TCP peer gets one answer, a little memory and a few seconds", "[protocol][daemon][security]") {
  // Issue 46, 2: bad headers kept an unauthenticated connection open (7.3 MB of them: 179k log
  // lines), each such connection could buffer a 64 MiB body, and idle ones were never closed.
  TempDir dir;
  Prismd daemon({"--socket", dir.socket(), "--listen", "tcp:127.0.0.1:0", "--auth-timeout", "1"});
  const int port = ready_tcp_port(daemon);

  SECTION("a header error is answered, then the connection is closed") {
    RawTcp peer(port);
    peer.send("Content-Lenght: 5\r\n\r\nhello" + std::string(100000, 'x'));
    auto reply = peer.until_closed(5s);
    REQUIRE(reply);
    CHECK_THAT(*reply, Catch::Contains("-32700"));
  }
  SECTION("a body over 64 KiB before the token is refused from its header") {
    RawTcp peer(port);
    peer.send("Content-Length: 60000000\r\n\r\n{");  // the rest never comes
    auto reply = peer.until_closed(5s);
    REQUIRE(reply);
    CHECK_THAT(*reply, Catch::Contains("exceeds the limit of 65536 bytes"));
  }
  SECTION("silence, or half a header, until the deadline") {
    RawTcp silent(port), half(port);
    half.send("Content-Length: 10\r\n");
    const auto start = std::chrono::steady_clock::now();
    CHECK(silent.until_closed(5s));
    CHECK(half.until_closed(5s));
    CHECK(std::chrono::steady_clock::now() - start >= 500ms);
    CHECK_THAT(log_with(daemon, "closed: no token within 1000 ms"), Catch::Contains("closed: no token within 1000 ms"));
  }
  SECTION("with the token, the limits are the usual ones") {
    std::string token;
    std::ifstream(dir / ("tcp-" + std::to_string(port) + ".token")) >> token;
    auto client = Client::connect_tcp("127.0.0.1", port);
    client->request("initialize", {{"capabilities", json::object()}, {"initializationOptions", {{"token", token}}}}, kTimeout);
    std::this_thread::sleep_for(1500ms);  // past the deadline: an authenticated client stays
    const std::string big = "program big(X: f32[n]) {\n" + std::string(200000, ' ') + "  return X\n}\n";
    CHECK(client->request("program/open", {{"uri", "file:///big.prism"}, {"text", big}}, kTimeout).contains("programs"));
  }
  CHECK_FALSE(daemon.wait_exit(0ms));
}

TEST_CASE("idle TCP peers without a token cannot take the daemon's descriptors", "[protocol][daemon][security]") {
  // Issue 46, 2: 300 idle connections exhausted 256 descriptors, the accept loop spun at 100% CPU
  // and the owner's Unix-socket client timed out. Now at most 16 wait for their token at once.
  TempDir dir;
  Prismd daemon({"--socket", dir.socket(), "--listen", "tcp:127.0.0.1:0"});
  const int port = ready_tcp_port(daemon);
  const rlimit few{48, 48};
  REQUIRE(::prlimit(daemon.pid(), RLIMIT_NOFILE, &few, nullptr) == 0);
  std::vector<std::unique_ptr<RawTcp>> idle;
  for (int i = 0; i < 60; ++i) idle.push_back(std::make_unique<RawTcp>(port));
  std::vector<bool> closed(idle.size());
  for (const auto until = std::chrono::steady_clock::now() + 3s; std::chrono::steady_clock::now() < until;)
    for (size_t i = 0; i < idle.size(); ++i)
      if (!closed[i]) closed[i] = idle[i]->until_closed(5ms).has_value();
  CHECK(std::count(closed.begin(), closed.end(), true) == 60 - 16);
  auto local = Client::connect_unix(dir.socket());
  CHECK(local->request("initialize", {{"capabilities", json::object()}}, 5s).contains("capabilities"));
  CHECK(local->request("daemon/status", json::object(), 5s)["clients"] == 1 + 16);
  CHECK_THAT(log_with(daemon, "16 are already waiting"), Catch::Contains("16 are already waiting to present the token"));
}

namespace {

// The resident memory of process `pid`, in bytes (VmRSS), or -1.
int64_t resident_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

// One framed JSON-RPC message.
std::string framed(const json& message) {
  const std::string body = message.dump();
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A Unix-socket connection that writes without reading, for a flood.
class RawUnix {
 public:
  explicit RawUnix(const std::string& path) : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un at{};
    at.sun_family = AF_UNIX;
    std::snprintf(at.sun_path, sizeof at.sun_path, "%s", path.c_str());
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
  }
  ~RawUnix() { ::close(fd_); }
  RawUnix(const RawUnix&) = delete;
  RawUnix& operator=(const RawUnix&) = delete;
  // Sends what the socket takes within `patience`; how many bytes that was.
  size_t send_some(const std::string& bytes, std::chrono::milliseconds patience) {
    size_t done = 0;
    for (const auto until = std::chrono::steady_clock::now() + patience; done < bytes.size() && std::chrono::steady_clock::now() < until;) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) done += size_t(n);
      else std::this_thread::sleep_for(1ms);
    }
    return done;
  }
  // Reads until `count` replies ("\"id\":") came or `timeout` passed; how many came.
  size_t read_replies(size_t count, std::chrono::milliseconds timeout) {
    size_t seen = 0;
    std::string tail;
    for (const auto until = std::chrono::steady_clock::now() + timeout; seen < count && std::chrono::steady_clock::now() < until;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char chunk[1 << 16];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      tail.append(chunk, size_t(n));
      for (size_t at; (at = tail.find("Content-Length:")) != std::string::npos;) {
        ++seen;
        tail.erase(0, at + 15);
      }
    }
    return seen;
  }

 private:
  int fd_;
};

}  // namespace

TEST_CASE("a client that sends without reading its replies costs the daemon bounded memory", "[protocol][daemon][security][flood]") {
  // Issue 61, 7: 2.9M requests without reading a reply grew prismd from 687 MB to 1.6 GB. Now a
  // connection is not read while 16 MiB of its replies wait to be written: its sends block.
  TempDir dir;
  Prismd daemon({"--socket", dir.socket()});
  REQUIRE(daemon.wait_ready());
  RawUnix flood(dir.socket());
  REQUIRE(flood.send_some(framed({{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"}, {"params", {{"capabilities", json::object()}}}}), 5s) > 0);
  const std::string program = "program p(X: f32[n, d], W: f32[d, d]) {\n" + std::string(1500, ' ') + "\n  return X @ W\n}\n";
  flood.send_some(framed({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "program/open"}, {"params", {{"uri", "file:///p.prism"}, {"text", program}}}}), 5s);
  const int64_t before = resident_bytes(daemon.pid());
  // program/show answers with the program's text: about 2 KB a reply, 100k of them would be 200 MB.
  std::string requests;
  std::vector<size_t> ends;  // where each request ends
  for (size_t i = 0; i < 100000; ++i) {
    requests += framed({{"jsonrpc", "2.0"}, {"id", int64_t(i + 2)}, {"method", "program/show"}, {"params", {{"program", "p"}}}});
    ends.push_back(requests.size());
  }
  const size_t sent = flood.send_some(requests, 20s);
  INFO("sent " << sent << " of " << requests.size() << " bytes; RSS before " << before);
  CHECK(sent < requests.size());  // the daemon stopped reading: the client's sends block
  const int64_t during = resident_bytes(daemon.pid());
  INFO("RSS during " << during);
  CHECK(during - before < (int64_t(120) << 20));

  // The owner's other clients are served meanwhile.
  auto other = Client::connect_unix(dir.socket());
  CHECK(other->request("initialize", {{"capabilities", json::object()}}, 10s).contains("capabilities"));
  CHECK(other->request("program/list", json::object(), 10s)["programs"].size() == 1);
  // And the flood's replies all come once it reads them, none lost.
  const size_t whole = size_t(std::upper_bound(ends.begin(), ends.end(), sent) - ends.begin());
  CHECK(flood.read_replies(whole + 2, 120s) >= whole + 2);  // with initialize's and program/open's (and notifications)
}

TEST_CASE("a flood of token-less TCP peers writes a bounded log, and says how much it left out", "[protocol][daemon][security][flood]") {
  // Issue 61, 8: 510k token-less connections in 20 s wrote 1.5M lines (112 MB) to the owner's log.
  TempDir dir;
  Prismd daemon({"--socket", dir.socket(), "--listen", "tcp:127.0.0.1:0"});
  const int port = ready_tcp_port(daemon);
  const std::string log_before = daemon.stderr_text();
  const size_t lines_before = size_t(std::count(log_before.begin(), log_before.end(), '\n'));
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 600; ++i) {
    RawTcp peer(port);
    peer.send(framed({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"initializationOptions", {{"token", "0"}}}}}}));
    peer.until_closed(5s);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The owner's client: logged in full, and its line comes after the count of what was left out.
  auto owner = Client::connect_unix(dir.socket());
  owner->request("initialize", {{"capabilities", json::object()}}, 10s);
  CHECK_THROWS(owner->request("no/such/method", json::object(), 10s));
  const std::string log = log_with(daemon, "no/such/method");
  const size_t lines = size_t(std::count(log.begin(), log.end(), '\n')) - lines_before;
  INFO(seconds << " s, " << lines << " lines\n" << log.substr(log.size() > 4000 ? log.size() - 4000 : 0));
  CHECK(lines <= size_t(50 + 2 * seconds + 10));  // 600 peers would write about 2,400 lines
  CHECK_THAT(log, Catch::Contains("line(s) about peers without the token"));
  CHECK_THAT(log, Catch::Contains("no/such/method"));
}
