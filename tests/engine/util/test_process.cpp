// run_process (engine/util/process.h): output, exit status and signal, the time limit, and that
// nothing the command started outlives it or prism (a compiler driver's linker, D13).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "engine/util/process.h"
#include "support/subprocess.h"

using namespace std::chrono_literals;

namespace {

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  return line.find(") Z ") == std::string::npos;  // a zombie waits for init to reap it
}

bool dies_within(pid_t pid, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (alive(pid) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  return !alive(pid);
}

}  // namespace

TEST_CASE("run_process: input, output, exit code and the signal that ended the command", "[util][process]") {
  prism::ProcessResult r = prism::run_process({"sh", "-c", "cat; echo err >&2; exit 3"}, "in\n");
  CHECK(r.out == "in\n");
  CHECK(r.err == "err\n");
  CHECK(r.exit_code == 3);
  CHECK_FALSE(r.timed_out);
  r = prism::run_process({"sh", "-c", "kill -TERM $$"});
  CHECK(r.term_signal == SIGTERM);
  CHECK(r.exit_code == -1);
  r = prism::run_process({"/nonexistent/compiler"});
  CHECK(r.exit_code == 127);
  CHECK_THAT(r.err, Catch::Contains("/nonexistent/compiler"));
}

TEST_CASE("run_process: the time limit kills what the command started too", "[util][process]") {
  prism::ProcessResult r = prism::run_process({"sh", "-c", "sleep 30 & echo $!; wait"}, "", {}, 500ms);
  CHECK(r.timed_out);
  REQUIRE_FALSE(r.out.empty());
  CHECK(dies_within(static_cast<pid_t>(std::stol(r.out)), 5s));
}

TEST_CASE("run_process: when its caller is killed, the command and its children die", "[util][process]") {
  prism::test::TempDir dir;
  const std::string pids = dir / "pids";
  pid_t caller = ::fork();
  REQUIRE(caller >= 0);
  if (caller == 0) {  // a stand-in for prismd: runs a 'compiler' whose 'linker' would outlive it
    prism::run_process({"sh", "-c", "sleep 60 & echo $$ $! > " + pids + ".part && mv " + pids + ".part " + pids + "; wait"});
    ::_exit(0);
  }
  pid_t shell = 0, grandchild = 0;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!(std::ifstream(pids) >> shell >> grandchild) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  REQUIRE(grandchild > 0);
  ::kill(caller, SIGKILL);
  ::waitpid(caller, nullptr, 0);
  CHECK(dies_within(shell, 5s));
  CHECK(dies_within(grandchild, 5s));
}
