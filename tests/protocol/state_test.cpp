// Hostile files and sizes against a socket daemon (issue 17): FIFOs and devices are refused at once
// (D5, D6), a request over the memory budget is an error before it allocates (D7), a damaged
// document store is logged by file and field and the rest restored (D8), outputs replace a
// symlink instead of writing through it and are private (D15).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "clients.h"
#include "prismd_process.h"
#include "repl/client.h"
#include "tests_common.h"

using namespace prism::test;
using prism::repl::Client;
using prism::repl::RpcError;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr auto kTimeout = std::chrono::milliseconds(20000);


// The error of a request that must fail: {code, message}.
std::pair<int, std::string> failure(Client& client, const std::string& method, const json& params) {
  try {
    client.request(method, params, kTimeout);
  } catch (const RpcError& e) {
    return {e.code(), e.what()};
  }
  FAIL(method << " succeeded");
  return {};
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("FIFOs and devices are refused at once, and other clients never wait", "[protocol][daemon][hostile][files]") {
  TempDir dir;
  Prismd daemon({"--socket", dir.socket()});
  REQUIRE(daemon.wait_ready());
  auto client = connect_initialized(dir.socket());
  std::string fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);

  auto start = std::chrono::steady_clock::now();
  auto [code, message] = failure(*client, "program/open", {{"uri", "file://" + fifo}});
  CHECK(code == -32803);
  CHECK_THAT(message, Catch::Contains("not a regular file (a FIFO)"));
  CHECK_THAT(failure(*client, "program/open", {{"uri", "file:///dev/zero"}}).second, Catch::Contains("(a device)"));
  // The other client's initialize was never behind a blocked read.
  CHECK(connect_initialized(dir.socket()) != nullptr);

  client->request("program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}}, kTimeout);
  auto run = failure(*client, "program/run", {{"program", "rms_linear"}, {"inputs", {{"X", fifo}}}});
  CHECK_THAT(run.second, Catch::Contains("a FIFO"));
  CHECK(std::chrono::steady_clock::now() - start < 10s);
}

TEST_CASE("a request over the memory budget is an error before anything is allocated", "[protocol][daemon][hostile][memory]") {
  TempDir dir;
  Prismd daemon({"--socket", dir.socket(), "--memory-budget", "64M"});
  REQUIRE(daemon.wait_ready());
  auto client = connect_initialized(dir.socket());
  // Two 2^30-element vectors: each under the interpreter's per-tensor limit, 12 GiB together (D7).
  client->request("program/open",
                  {{"uri", "untitled:big"},
                   {"text",
                    "program add(X: f32[1073741824], Y: f32[1073741824]) {\n  return X + Y\n}\n"
                    "program scale(X: f32[n, d]) {\n  return X * 2\n}\n"}},
                  kTimeout);
  auto search = failure(*client, "search/run", {{"program", "add"}});
  CHECK_THAT(search.second, Catch::Contains("searching 'add' needs about") && Catch::Contains("memory budget of 64 MiB"));
  auto run = failure(*client, "program/run", {{"program", "scale"}, {"bindings", {{"n", 8192}, {"d", 8192}}}});
  CHECK_THAT(run.second, Catch::Contains("running 'scale' at d=8192 n=8192 needs about 512 MiB"));
  auto tune = failure(*client, "tune/run", {{"program", "scale"}, {"bindings", {{"n", 8192}, {"d", 8192}}}});
  CHECK_THAT(tune.second, Catch::Contains("memory budget"));
  // Within the budget all is as before.
  json ok = client->request("program/run", {{"program", "scale"}, {"bindings", {{"n", 64}, {"d", 64}}}}, kTimeout);
  CHECK(ok["outputs"][0]["shape"] == json{64, 64});
  CHECK_FALSE(daemon.wait_exit(0ms));
}

TEST_CASE("a damaged document store: each bad entry is logged by file and field, the rest restored",
          "[protocol][daemon][persist][hostile]") {
  TempDir dir, state;
  const std::vector<std::string> args = {"--socket", dir.socket(), "--state-dir", state.path()};
  std::string store;
  {
    Prismd daemon(args);
    REQUIRE(daemon.wait_ready());
    auto client = connect_initialized(dir.socket());
    client->request("program/open", {{"uri", "untitled:keep"}, {"text", kRmsLinear}}, kTimeout);
    client->request("daemon/stop", json::object(), kTimeout);
    REQUIRE(daemon.wait_exit() == 0);
    for (const auto& e : std::filesystem::directory_iterator(state / "documents")) store = e.path().string();
  }
  // A hostile or damaged store: a version of the wrong type, a FIFO and /dev/zero as documents
  // (a restart must neither hang nor read until out of memory, D6), a missing text.
  std::string fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  json saved = json::parse(read_text(store));
  saved["documents"].push_back({{"uri", "untitled:bad"}, {"version", "seven"}, {"text", "x"}});
  saved["documents"].push_back({{"uri", "file://" + fifo}, {"version", 1}, {"text", "program f(X: f32[n]) {\n  return X\n}\n"}});
  saved["documents"].push_back({{"uri", "file:///dev/zero"}, {"version", 1}, {"text", ""}});
  saved["documents"].push_back({{"uri", "untitled:notext"}, {"version", 1}});
  std::ofstream(store) << saved.dump();

  Prismd daemon(args);
  REQUIRE(daemon.wait_ready());
  auto client = connect_initialized(dir.socket());
  json list = client->request("program/list", json::object(), kTimeout);
  std::vector<std::string> names;
  for (const auto& p : list["programs"]) names.push_back(p["name"]);
  CHECK(names == std::vector<std::string>{"f", "rms_linear"});  // the FIFO's saved text stands in for it
  std::string log = daemon.stderr_text();
  CHECK_THAT(log, Catch::Contains("skipping documents[1] of " + store + ": it 'version' must be an integer, but is string"));
  CHECK_THAT(log, Catch::Contains("skipping documents[4] of " + store + ": it has no 'text'"));
  CHECK_THAT(log, Catch::Contains("restoring file://" + fifo + " from its saved text: " + fifo + " is not a regular file (a FIFO)"));
}

TEST_CASE("program/run output replaces a symlink instead of writing through it, and is private", "[protocol][daemon][hostile][files]") {
  TempDir dir;
  Prismd daemon({"--socket", dir.socket()});
  REQUIRE(daemon.wait_ready());
  auto client = connect_initialized(dir.socket());
  client->request("program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}}, kTimeout);
  std::string victim = dir / "authorized_keys";
  std::ofstream(victim) << "ssh-ed25519 AAAA owner\n";
  std::string out = dir / "out.npy";
  REQUIRE(::symlink(victim.c_str(), out.c_str()) == 0);
  client->request("program/run", {{"program", "rms_linear"}, {"bindings", {{"n", 2}, {"d", 4}}}, {"output", out}}, kTimeout);
  CHECK(read_text(victim) == "ssh-ed25519 AAAA owner\n");
  CHECK_FALSE(std::filesystem::is_symlink(out));
  CHECK(read_text(out).rfind("\x93NUMPY", 0) == 0);
  struct stat st {};
  REQUIRE(::stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  // Issue 46, 5: a FIFO (or, as root, a device) named as the output is refused and stays.
  const std::string fifo = dir / "out.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(failure(*client, "program/run", {{"program", "rms_linear"}, {"bindings", {{"n", 2}, {"d", 4}}}, {"output", fifo}}).second,
             Catch::Contains("refusing to replace") && Catch::Contains("(a FIFO)"));
  CHECK(std::filesystem::is_fifo(fifo));
  if (::geteuid() == 0) {
    const std::string null = dir / "n";
    REQUIRE(::mknod(null.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0);
    CHECK_THAT(failure(*client, "program/run", {{"program", "rms_linear"}, {"bindings", {{"n", 2}, {"d", 4}}}, {"output", null}}).second,
               Catch::Contains("(a device)"));
    CHECK(std::filesystem::is_character_file(null));
  }
}

TEST_CASE("a document store too large to read is moved aside, never overwritten", "[protocol][daemon][persist][hostile][security]") {
  // Issue 46, 4: after documents worth more than the store's 256 MiB read limit, a restart began
  // with no documents and the next open overwrote the store. Now a store that cannot be read is
  // moved aside (and texts are limited so that a saved store can always be read back).
  TempDir dir, state;
  const std::vector<std::string> args = {"--socket", dir.socket(), "--state-dir", state.path()};
  std::string store;
  {
    Prismd daemon(args);
    REQUIRE(daemon.wait_ready());
    auto client = connect_initialized(dir.socket());
    client->request("program/open", {{"uri", "untitled:keep"}, {"text", kRmsLinear}}, kTimeout);
    // A text over 16 MiB is refused, not kept for a store that could not be read back.
    CHECK(failure(*client, "program/open", {{"uri", "untitled:huge"}, {"text", std::string((16 << 20) + 1, '#')}}).second.find(
              "more than the limit of 16777216") != std::string::npos);
    client->request("daemon/stop", json::object(), kTimeout);
    REQUIRE(daemon.wait_exit() == 0);
    for (const auto& e : std::filesystem::directory_iterator(state / "documents")) store = e.path().string();
  }
  const std::string saved = read_text(store);
  REQUIRE_THAT(saved, Catch::Contains("untitled:keep"));
  std::filesystem::resize_file(store, (size_t(256) << 20) + 1);  // sparse: past the read limit, no disk used
  // And an earlier store moved aside, which must not be overwritten either.
  std::ofstream(store + ".corrupt") << "an earlier one";

  Prismd daemon(args);
  REQUIRE(daemon.wait_ready());
  auto client = connect_initialized(dir.socket());
  client->request("program/open", {{"uri", "untitled:new"}, {"text", kRmsLinear}}, kTimeout);  // saves the store again
  CHECK_THAT(daemon.stderr_text(), Catch::Contains("more than the limit of 268435456") && Catch::Contains("moved it to " + store + ".corrupt.1"));
  CHECK(read_text(store + ".corrupt") == "an earlier one");
  std::string head(saved.size(), '\0');
  std::ifstream(store + ".corrupt.1", std::ios::binary).read(head.data(), std::streamsize(head.size()));
  CHECK(head == saved);
  CHECK_THAT(read_text(store), Catch::Contains("untitled:new"));
}
