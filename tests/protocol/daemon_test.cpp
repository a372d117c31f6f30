// prismd end to end: --stdio, the Unix socket, TCP on loopback, many clients, cancellation,
// daemon/stop and signals. Every test reaps its daemon (Prismd's destructor) and bounds its waits.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "clients.h"
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

int rpc_code(const std::function<void()>& call) {
  try {
    call();
  } catch (const RpcError& e) {
    return e.code();
  }
  return 0;
}

void initialize(Client& client) {
  json r = client.request("initialize", {{"processId", ::getpid()}, {"capabilities", json::object()}}, kTimeout);
  REQUIRE(r["serverInfo"]["name"] == "prismd");
  client.notify("initialized", json::object());
}


// The next message that is not a notification, skipping those.
json next_response(Client& client, std::chrono::milliseconds timeout = kTimeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto m = client.read_message(std::max(left, 0ms));
    REQUIRE(m);
    if (m->contains("id")) return *m;
  }
}

std::string frame(const json& message) { return prism::protocol::encode_frame(message.dump()); }

}  // namespace

TEST_CASE("prismd --help and bad arguments", "[protocol][daemon]") {
  {
    Prismd help({"--help"});
    CHECK(help.wait_exit() == 0);
    CHECK_THAT(help.stderr_text(), Catch::Contains("usage: prismd"));
  }
  {
    Prismd bad({"--listen", "tcp:0.0.0.0:0"});
    CHECK(bad.wait_exit() == 2);
    CHECK_THAT(bad.stderr_text(), Catch::Contains("not a loopback address"));
  }
  {
    Prismd bad({"--frobnicate"});
    CHECK(bad.wait_exit() == 2);
  }
  {
    Prismd bad({"--idle-exit", "soon"});
    CHECK(bad.wait_exit() == 2);
    CHECK_THAT(bad.stderr_text(), Catch::Contains("--idle-exit soon: expected a number of seconds"));
  }
}

TEST_CASE("prismd --stdio serves one client on stdin/stdout", "[protocol][daemon][stdio]") {
  Prismd daemon({"--stdio"}, /*stdio=*/true);
  auto client = Client::from_fds(daemon.take_stdout_read(), daemon.take_stdin_write());
  initialize(*client);

  // The repository's example, read by the daemon from its path.
  json state = client->request("program/open", {{"uri", kExamplePath}}, kTimeout);
  CHECK(state["uri"] == "file://" + kExamplePath);
  CHECK(state["programs"] == json{"rms_linear"});
  CHECK(state["diagnostics"].empty());
  REQUIRE(client->notifications().size() == 1);
  CHECK(client->notifications()[0]["method"] == "program/diagnostics");
  CHECK(client->notifications()[0]["params"]["uri"] == "file://" + kExamplePath);
  json run = client->request("program/run", {{"program", "rms_linear"}, {"bindings", {{"n", 2}, {"d", 4}}}}, kTimeout);
  CHECK(run["outputs"][0]["shape"] == json{2, 4});
  json status = client->request("daemon/status", json::object(), kTimeout);
  CHECK(status["pid"] == daemon.pid());
  CHECK(status["clients"] == 1);

  SECTION("shutdown then exit: exit code 0") {
    CHECK(client->request("shutdown", nullptr, kTimeout).is_null());
    client->notify("exit", nullptr);
    CHECK(daemon.wait_exit() == 0);
  }
  SECTION("exit without shutdown: exit code 1") {
    client->notify("exit", nullptr);
    CHECK(daemon.wait_exit() == 1);
  }
  SECTION("the client closing the pipe ends the daemon") {
    client.reset();
    CHECK(daemon.wait_exit() == 1);
  }
}

TEST_CASE("prismd --stdio keeps stderr for failures: an editor shows it as errors", "[protocol][daemon][stdio][lsp]") {
  TempDir state;
  Prismd daemon({"--stdio", "--state-dir", state.path()}, /*stdio=*/true);
  auto client = Client::from_fds(daemon.take_stdout_read(), daemon.take_stdin_write());
  initialize(*client);
  CHECK(client->request("program/list", json::array(), kTimeout)["programs"].empty());  // [] params: none
  CHECK(client->request("shutdown", nullptr, kTimeout).is_null());
  client->notify("exit", nullptr);
  CHECK(daemon.wait_exit() == 0);
  CHECK(daemon.stderr_text().empty());
  std::ifstream log(state / "prismd-stdio.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("started (pid " + std::to_string(daemon.pid()) + ","));
}

TEST_CASE("prismd --stdio --attach relays an editor to the shared daemon, starting it when none runs", "[protocol][daemon][stdio][lsp]") {
  TempDir dir, state;
  {
    // No daemon answers on the socket: the relay starts one (its state in `state`).
    Prismd editor({"--stdio", "--attach", "--socket", dir.socket(), "--state-dir", state.path()}, /*stdio=*/true);
    auto client = Client::from_fds(editor.take_stdout_read(), editor.take_stdin_write());
    initialize(*client);
    client->request("program/open", {{"uri", "untitled:editor"}, {"text", kRmsLinear}}, kTimeout);
    // The REPL's view, on the shared daemon's socket: the editor's program.
    auto repl = connect_initialized(dir.socket());
    json list = repl->request("program/list", json::object(), kTimeout);
    REQUIRE(list["programs"].size() == 1);
    CHECK(list["programs"][0]["uri"] == "untitled:editor");
    json status = repl->request("daemon/status", json::object(), kTimeout);
    CHECK(status["pid"] != editor.pid());
    CHECK(status["clients"] == 2);
    // The editor leaves: the relay ends, the shared daemon stays.
    CHECK(client->request("shutdown", nullptr, kTimeout).is_null());
    client->notify("exit", nullptr);
    CHECK(editor.wait_exit() == 0);
    CHECK(repl->request("program/list", json::object(), kTimeout)["programs"].size() == 1);
    // A second editor attaches to the running daemon.
    Prismd again({"--stdio", "--attach", "--socket", dir.socket()}, /*stdio=*/true);
    auto second = Client::from_fds(again.take_stdout_read(), again.take_stdin_write());
    initialize(*second);
    CHECK(second->request("daemon/status", json::object(), kTimeout)["pid"] == status["pid"]);
    second.reset();
    CHECK(again.wait_exit() == 0);
    repl->request("daemon/stop", json::object(), kTimeout);
  }
  {
    Prismd bad({"--attach"});
    CHECK(bad.wait_exit() == 2);
    CHECK_THAT(bad.stderr_text(), Catch::Contains("--attach works with --stdio only"));
  }
}

TEST_CASE("prismd on a Unix socket", "[protocol][daemon][unix]") {
  TempDir dir;
  Prismd daemon({"--socket", dir.socket()});
  auto ready = daemon.wait_ready();
  REQUIRE(ready);
  CHECK(*ready == "prismd: listening on unix:" + dir.socket());
  REQUIRE(std::filesystem::is_socket(dir.socket()));

  auto client = connect_initialized(dir.socket());
  json status = client->request("daemon/status", json::object(), kTimeout);
  CHECK(status["socket"] == dir.socket());
  CHECK(status["pid"] == daemon.pid());

  SECTION("a second daemon on the same socket refuses to start") {
    Prismd second({"--socket", dir.socket()});
    CHECK(second.wait_exit() == 1);
    CHECK_THAT(second.stderr_text(), Catch::Contains("already listening on " + dir.socket()));
    // The first one is undisturbed. The second probed the socket by connecting: under load the
    // first may not have seen that probe hang up yet when it answers, so it is asked until it has.
    int clients = 0;
    for (int i = 0; i < 50 && clients != 1; ++i) {
      if (i) std::this_thread::sleep_for(100ms);
      clients = client->request("daemon/status", json::object(), kTimeout)["clients"];
    }
    CHECK(clients == 1);
  }
  SECTION("daemon/stop answers, disconnects clients, removes the socket and exits 0") {
    auto other = connect_initialized(dir.socket());
    CHECK(client->request("daemon/stop", json::object(), kTimeout).is_null());
    CHECK(daemon.wait_exit() == 0);
    CHECK_FALSE(std::filesystem::exists(dir.socket()));
    CHECK_THROWS_AS(other->read_message(5s), ConnectionError);
  }
  SECTION("SIGTERM shuts down cleanly") {
    daemon.signal(SIGTERM);
    CHECK(daemon.wait_exit() == 0);
    CHECK_FALSE(std::filesystem::exists(dir.socket()));
  }
  SECTION("exit closes only that connection") {
    auto other = connect_initialized(dir.socket());
    other->request("shutdown", nullptr, kTimeout);
    other->notify("exit", nullptr);
    CHECK_THROWS_AS(other->read_message(5s), ConnectionError);
    CHECK_FALSE(daemon.wait_exit(100ms));
    CHECK(client->request("daemon/status", json::object(), kTimeout)["clients"] == 1);
  }
}

TEST_CASE("a stale socket file is replaced", "[protocol][daemon][unix]") {
  TempDir dir;
  {
    // A socket file nobody listens on any more, as a crashed daemon leaves behind.
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, dir.socket().c_str());
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::close(fd);
  }
  REQUIRE(std::filesystem::is_socket(dir.socket()));
  Prismd daemon({"--socket", dir.socket()});
  REQUIRE(daemon.wait_ready());
  auto client = connect_initialized(dir.socket());
  CHECK(client->request("program/list", json::object(), kTimeout)["programs"].empty());
}

TEST_CASE("prismd on TCP loopback with port 0", "[protocol][daemon][tcp]") {
  TempDir dir;
  Prismd daemon({"--socket", dir.socket(), "--listen", "tcp:127.0.0.1:0"});
  auto ready = daemon.wait_ready();
  REQUIRE(ready);
  auto at = ready->find("tcp:127.0.0.1:");
  REQUIRE(at != std::string::npos);
  int port = std::stoi(ready->substr(at + 14));
  CHECK(port > 0);

  // The token is in a 0600 file beside the socket; a TCP client presents it in initialize.
  const std::string token_file = dir / ("tcp-" + std::to_string(port) + ".token");
  REQUIRE(std::filesystem::exists(token_file));
  CHECK((std::filesystem::status(token_file).permissions() & std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
  std::string token;
  std::ifstream(token_file) >> token;
  CHECK(token.size() == 64);
  auto client = Client::connect_tcp("127.0.0.1", port);
  client->request("initialize", {{"capabilities", json::object()}, {"initializationOptions", {{"token", token}}}}, kTimeout);
  json state = client->request("program/open", {{"uri", "untitled:t"}, {"text", kRmsLinear}}, kTimeout);
  CHECK(state["programs"] == json{"rms_linear"});
  json status = client->request("daemon/status", json::object(), kTimeout);
  CHECK(status["tcp"] == "tcp:127.0.0.1:" + std::to_string(port));
  CHECK(status["tokenFile"] == token_file);
  // Documents are shared between transports.
  auto local = connect_initialized(dir.socket());
  CHECK(local->request("program/list", json::object(), kTimeout)["programs"].size() == 1);
}

TEST_CASE("one client's garbage never disturbs another", "[protocol][daemon][isolation]") {
  TempDir dir;
  Prismd daemon({"--socket", dir.socket(), "--max-message-bytes", "4096"});
  REQUIRE(daemon.wait_ready());
  auto a = Client::connect_unix(dir.socket());
  auto b = connect_initialized(dir.socket());

  std::thread noisy([&] {
    a->send_raw("Content-Length: banana\r\n\r\n");
    a->send_raw(frame({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", json::object()}}));
    a->send_raw("Content-Length: 9\r\n\r\n{not json");
    a->send_raw(frame({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "program/open"},
                       {"params", {{"uri", "untitled:big"}, {"text", std::string(10000, 'x')}}}}));
    a->send_raw(frame({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "no/such"}}));
    a->send_raw(frame(json::array()));
  });

  // Meanwhile B works normally.
  json state = b->request("program/open", {{"uri", "untitled:b"}, {"text", kBroken}}, kTimeout);
  CHECK_FALSE(state["diagnostics"].empty());
  REQUIRE(b->notifications().size() == 1);
  CHECK(b->notifications()[0]["params"]["uri"] == "untitled:b");
  CHECK_FALSE(b->notifications()[0]["params"]["diagnostics"].empty());
  b->request("program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}}, kTimeout);
  json run = b->request("program/run", {{"program", "rms_linear"}, {"bindings", {{"n", 3}, {"d", 5}}}}, kTimeout);
  CHECK(run["outputs"][0]["shape"] == json{3, 5});
  noisy.join();

  // A got one answer per message, in order, and its connection still works.
  std::vector<std::pair<json, int>> expected = {{nullptr, -32700}, {1, 0}, {nullptr, -32700},
                                                {nullptr, -32600}, {3, -32601}, {nullptr, -32600}};
  for (auto& [id, code] : expected) {
    json m = next_response(*a);
    INFO(m.dump());
    CHECK(m["id"] == id);
    if (code == 0)
      CHECK(m.contains("result"));
    else
      CHECK(m["error"]["code"] == code);
  }
  // B's broken document defines no checked program; rms_linear is B's other one.
  CHECK(a->request("program/list", json::object(), kTimeout)["programs"].size() == 1);
  // A disconnecting abruptly leaves B alone.
  a.reset();
  CHECK(b->request("daemon/status", json::object(), kTimeout)["clients"] == 1);
}

TEST_CASE("cancelling a long program/run over the socket", "[protocol][daemon][cancel]") {
  TempDir dir;
  Prismd daemon({"--socket", dir.socket()});
  REQUIRE(daemon.wait_ready());
  auto client = connect_initialized(dir.socket());
  auto other = connect_initialized(dir.socket());
  client->request("program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}}, kTimeout);

  client->send_raw(frame({{"jsonrpc", "2.0"}, {"id", "long"}, {"method", "program/run"},
                          {"params", {{"program", "rms_linear"}, {"bindings", {{"n", 4096}, {"d", 4096}}}}}}));
  // Neither this connection nor another one waits for the run.
  CHECK(client->request("program/list", json::object(), kTimeout)["programs"].size() == 1);
  CHECK(other->request("daemon/status", json::object(), kTimeout)["clients"] == 2);
  std::this_thread::sleep_for(200ms);

  auto start = std::chrono::steady_clock::now();
  client->notify("$/cancelRequest", {{"id", "long"}});
  json r = next_response(*client);
  CHECK(r["id"] == "long");
  CHECK(r["error"]["code"] == -32800);
  CHECK(std::chrono::steady_clock::now() - start < 5s);

  SECTION("a client that leaves mid-run does not disturb the daemon") {
    other->request("program/open", {{"uri", "untitled:o"}, {"text", kBroken}}, kTimeout);
    other->send_raw(frame({{"jsonrpc", "2.0"}, {"id", 9}, {"method", "program/run"},
                           {"params", {{"program", "rms_linear"}, {"bindings", {{"n", 4096}, {"d", 4096}}}}}}));
    std::this_thread::sleep_for(100ms);
    other.reset();
    CHECK(rpc_code([&] { client->request("program/show", {{"program", "nope"}}, kTimeout); }) == -32803);
    CHECK(client->request("daemon/status", json::object(), kTimeout)["clients"] == 1);
  }
}

TEST_CASE("open documents come back when the daemon restarts", "[protocol][daemon][persist]") {
  TempDir dir;
  TempDir state;
  const std::vector<std::string> args = {"--socket", dir.socket(), "--state-dir", state.path()};
  const std::string typed = "repl:/twice";
  // One daemon lifetime: start, serve `body`, stop cleanly.
  auto session = [&](const std::function<void(Client&)>& body) {
    Prismd daemon(args);
    REQUIRE(daemon.wait_ready());
    auto client = connect_initialized(dir.socket());
    body(*client);
    client->request("daemon/stop", json::object(), kTimeout);
    REQUIRE(daemon.wait_exit() == 0);
  };
  session([&](Client& client) {
    client.request("program/open", {{"uri", typed}, {"text", "program twice(X: f32[n]) {\n  return X * 2\n}\n"}, {"version", 1}}, kTimeout);
    client.request("program/change", {{"uri", typed}, {"version", 4}, {"changes", {{{"text", "program twice(X: f32[n]) {\n  return X + X\n}\n"}}}}}, kTimeout);
    client.request("program/open", {{"uri", kExamplePath}}, kTimeout);
  });
  session([&](Client& client) {
    json list = client.request("program/list", json::object(), kTimeout);
    std::vector<std::string> names;
    for (const auto& p : list["programs"]) names.push_back(p["name"]);
    CHECK(names == std::vector<std::string>{"rms_linear", "twice"});
    // The edited text and its version came back.
    CHECK(client.request("program/show", {{"program", "twice"}}, kTimeout)["lowered"].get<std::string>().find("X + X") != std::string::npos);
    CHECK(rpc_code([&] { client.request("program/change", {{"uri", typed}, {"version", 4}, {"changes", {{{"text", ""}}}}}, kTimeout); }) == -32803);
    // Closing is remembered too.
    client.request("program/close", {{"uri", typed}}, kTimeout);
  });
  session([&](Client& client) {
    json list = client.request("program/list", json::object(), kTimeout);
    REQUIRE(list["programs"].size() == 1);
    CHECK(list["programs"][0]["name"] == "rms_linear");
  });
  SECTION("an unreadable store is moved aside with a log line, and rebuilt") {
    std::string store;
    for (const auto& entry : std::filesystem::directory_iterator(state.path() + "/documents")) {
      store = entry.path().string();
      std::ofstream(entry.path()) << "{ not json";
    }
    Prismd daemon(args);
    REQUIRE(daemon.wait_ready());
    auto client = connect_initialized(dir.socket());
    CHECK(client->request("program/list", json::object(), kTimeout)["programs"].empty());
    CHECK_THAT(daemon.stderr_text(), Catch::Contains("is unreadable (not JSON, perhaps truncated)"));
    CHECK(std::filesystem::exists(store + ".corrupt"));
    client->request("program/open", {{"uri", "untitled:new"}, {"text", kRmsLinear}}, kTimeout);
    CHECK(json::parse(std::ifstream(store))["documents"].size() == 1);
  }
}

TEST_CASE("a daemon over stdio keeps no documents on disk", "[protocol][daemon][persist]") {
  TempDir state;
  Prismd daemon({"--stdio", "--state-dir", state.path()}, /*stdio=*/true);
  auto client = Client::from_fds(daemon.take_stdout_read(), daemon.take_stdin_write());
  initialize(*client);
  client->request("program/open", {{"uri", kExamplePath}}, kTimeout);
  CHECK_FALSE(std::filesystem::exists(state.path() + "/documents"));
}
