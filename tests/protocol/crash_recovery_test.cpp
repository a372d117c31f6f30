// kill -9 of the daemon during a search, a tune and a state write, then a restart (issue 17, D9 and
// D13): documents, the tuning DB and the kernel cache are intact or rebuilt, nothing transient is
// stored, no child outlives the daemon, and no temp file outlives the restart.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/util/sealed_file.h"
#include "clients.h"
#include "prismd_process.h"
#include "protocol/framing.h"
#include "repl/client.h"
#include "tests_common.h"

using namespace prism::test;
using prism::repl::Client;
using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr auto kTimeout = std::chrono::milliseconds(120000);


void send_request(Client& client, const std::string& id, const std::string& method, const json& params) {
  client.send_raw(prism::protocol::encode_frame(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump()));
}

// Files under `dir` whose name says they are half written.
std::vector<std::string> temp_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->path().filename().string().find(".tmp.") != std::string::npos) out.push_back(it->path().string());
  return out;
}

// Live processes whose command line names `path` (a compiler writing into the kernel cache,
// wherever it was reparented to).
std::vector<pid_t> processes_naming(const std::string& path) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc", ec); it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(it->path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(path) != std::string::npos) out.push_back(pid_t(std::stol(name)));
  }
  return out;
}

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  return line.find(") Z ") == std::string::npos;  // a zombie waits for init to reap it
}

}  // namespace

TEST_CASE("kill -9 during a tune: its children die, nothing transient is stored, the restart cleans up", "[protocol][daemon][crash]") {
  TempDir dir, state;
  const std::map<std::string, std::string> env = {
      {"PRISM_CACHE_DIR", dir / "cache"}, {"PRISM_FAULT_INJECT", "hang@1"}, {"PRISM_KERNEL_TIMEOUT", "60"}};
  const std::vector<std::string> args = {"--socket", dir.socket(), "--state-dir", state.path()};
  const json tune = {{"program", "rms_linear"}, {"bindings", {{"n", 4}, {"d", 64}}}, {"top", 2}};
  std::vector<pid_t> children;
  {
    auto daemon = start_prismd_with(env, args);
    REQUIRE(daemon->wait_ready());
    auto client = connect_initialized(dir.socket());
    client->request("program/open", {{"uri", "untitled:r"}, {"text", kRmsLinear}}, kTimeout);
    send_request(*client, "tune", "tune/run", tune);
    // Wait until the planted hang holds the kernel runner: the tune is timing.
    auto deadline = std::chrono::steady_clock::now() + 90s;
    while (std::chrono::steady_clock::now() < deadline) {
      children = child_pids(daemon->pid());
      bool runner = false;
      for (pid_t c : children) {
        std::ifstream comm("/proc/" + std::to_string(c) + "/comm");
        std::string name;
        comm >> name;
        runner = runner || name.rfind("prism-runner", 0) == 0;
      }
      if (runner) break;
      std::this_thread::sleep_for(100ms);
    }
    REQUIRE_FALSE(children.empty());
    daemon->signal(SIGKILL);
    REQUIRE(daemon->wait_exit());
  }
  // The kernel runner and every compiler died with the daemon: its children seen before the
  // kill, and any compiler of the cache started since (under load, a keeper may take a moment to
  // see the daemon gone; a restart cleaning the cache before its linker died would miss a file).
  auto deadline = std::chrono::steady_clock::now() + 10s;
  auto any_alive = [&] {
    const std::vector<pid_t> compilers = processes_naming(dir / "cache");
    return std::any_of(children.begin(), children.end(), alive) || std::any_of(compilers.begin(), compilers.end(), alive);
  };
  while (any_alive() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
  CHECK_FALSE(any_alive());
  // Nothing of the interrupted tune was stored.
  CHECK((!fs::exists(state / "tune") || fs::is_empty(state / "tune")));

  // The restart: documents back, temp files gone, every cached kernel whole, the tune measured anew.
  // (Trusting every round: the second tune must come from the DB even on a busy machine.)
  auto daemon = start_prismd_with({{"PRISM_CACHE_DIR", dir / "cache"}, {"PRISM_TUNE_NOISE_LIMIT", "off"}}, args);
  REQUIRE(daemon->wait_ready());
  auto client = connect_initialized(dir.socket());
  CHECK(client->request("program/list", json::object(), kTimeout)["programs"].size() == 1);
  CHECK(temp_files(dir / "cache") == std::vector<std::string>{});  // the names, when not
  CHECK(temp_files(state.path()) == std::vector<std::string>{});
  for (const auto& e : fs::directory_iterator(dir / "cache/kernels"))
    if (e.path().extension() == ".so") CHECK(prism::read_sealed_file(e.path().string(), size_t(1) << 30).bytes);
  json result = client->request("tune/run", tune, kTimeout);
  CHECK_FALSE(result["fromDb"].get<bool>());
  CHECK(result["best"].is_object());
  CHECK(client->request("tune/run", tune, kTimeout)["fromDb"].get<bool>());
}

TEST_CASE("kill -9 during a search and during document writes: the restart has every document whole", "[protocol][daemon][crash]") {
  TempDir dir, state;
  const std::vector<std::string> args = {"--socket", dir.socket(), "--state-dir", state.path()};
  int64_t last_version = 0;
  {
    Prismd daemon(args);
    REQUIRE(daemon.wait_ready());
    auto client = connect_initialized(dir.socket());
    client->request("program/open", {{"uri", "untitled:big"}, {"text", read_example("rmsnorm_mlp")}}, kTimeout);
    send_request(*client, "search", "search/run", {{"program", "rmsnorm_mlp"}});
    // Edits stream in while the search runs: every one rewrites the store; the kill lands among them.
    std::string text = "program twice(X: f32[n]) {\n  return X * 2\n}\n";
    client->request("program/open", {{"uri", "untitled:edits"}, {"text", text}, {"version", 1}}, kTimeout);
    for (int v = 2; v < 60; ++v) {
      text += "// edit " + std::to_string(v) + "\n";
      client->send_raw(
          prism::protocol::encode_frame(json{{"jsonrpc", "2.0"},
                                             {"method", "program/change"},
                                             {"params", {{"uri", "untitled:edits"}, {"version", v}, {"changes", {{{"text", text}}}}}}}
                                            .dump()));
      last_version = v;
    }
    std::this_thread::sleep_for(300ms);
    daemon.signal(SIGKILL);
    REQUIRE(daemon.wait_exit());
  }
  Prismd daemon(args);
  REQUIRE(daemon.wait_ready());
  CHECK_THAT(daemon.stderr_text(), !Catch::Contains("unreadable"));
  auto client = connect_initialized(dir.socket());
  json list = client->request("program/list", json::object(), kTimeout);
  CHECK(list["programs"].size() == 2);
  CHECK(temp_files(state.path()).empty());
  // Some version of the edited document came back whole (the last one written before the kill).
  json shown = client->request("program/show", {{"program", "twice"}}, kTimeout);
  CHECK(shown.contains("lowered"));
  CHECK(last_version == 59);
  // And the search runs to the end in the new daemon.
  CHECK(client->request("search/run", {{"program", "rmsnorm_mlp"}}, kTimeout).contains("candidates"));
}
