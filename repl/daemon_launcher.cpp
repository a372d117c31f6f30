#include "repl/daemon_launcher.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "engine/util/process.h"
#include "engine/util/user_dirs.h"
#include "protocol/endpoint.h"

namespace prism::repl {

namespace {

std::string find_prismd(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv("PRISMD")) return env;
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    auto beside = std::filesystem::path(self).parent_path() / "prismd";
    if (std::filesystem::exists(beside)) return beside.string();
  }
  return "prismd";  // execvp searches $PATH
}

std::string tail_of(const std::string& path, size_t max_lines) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::string out;
  for (size_t i = lines.size() > max_lines ? lines.size() - max_lines : 0; i < lines.size(); ++i) out += "  " + lines[i] + "\n";
  return out;
}

// "tcp:HOST:PORT" (HOST may be "[::1]") as host and port; nullopt for anything else.
std::optional<std::pair<std::string, int>> tcp_endpoint(const std::string& spec) {
  if (spec.rfind("tcp:", 0) != 0) return std::nullopt;
  const size_t colon = spec.rfind(':');
  if (colon <= 4) return std::nullopt;
  std::string host = spec.substr(4, colon - 4);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const int port = std::atoi(spec.c_str() + colon + 1);
  if (port <= 0 || port > 65535) return std::nullopt;
  return std::pair{host, port};
}

}  // namespace

std::string token_for(const std::string& socket_path) {
  const auto endpoint = tcp_endpoint(socket_path);
  if (!endpoint) return "";
  const char* env = std::getenv("PRISM_TOKEN_FILE");
  const std::string file = env && *env ? env : user_runtime_dir() + "/tcp-" + std::to_string(endpoint->second) + ".token";
  std::ifstream in(file);
  std::string token;
  if (!(in >> token))
    throw ConnectionError("cannot read the daemon's TCP token from " + file +
                          " (prismd writes it there, readable by its user only; $PRISM_TOKEN_FILE names another file)");
  return token;
}

namespace {

std::unique_ptr<Client> connect_tcp(const std::string& spec) {
  const auto endpoint = tcp_endpoint(spec);
  if (!endpoint) throw ConnectionError("'" + spec + "' is not tcp:HOST:PORT");
  return Client::connect_tcp(endpoint->first, endpoint->second);
}

}  // namespace

std::unique_ptr<Client> connect_or_start(const LaunchOptions& options) {
  // A TCP listener belongs to a daemon someone else started (an editor's): connect, never start.
  if (options.socket_path.rfind("tcp:", 0) == 0) return connect_tcp(options.socket_path);
  try {
    return Client::connect_unix(options.socket_path);
  } catch (const ConnectionError& e) {
    if (!options.autostart)
      throw ConnectionError("no prismd answers on " + options.socket_path + " (" + e.what() +
                            "); start one with `prismd &` or drop --no-start");
  }

  std::string binary = find_prismd(options.prismd);
  std::string log = protocol::state_dir() + "/prismd.log";
  // The daemon outlives this REPL (its own session, output to the log file), and goes away by
  // itself once idle: its state stays on disk.
  const char* idle = std::getenv("PRISM_IDLE_EXIT");
  const std::string idle_exit = idle && *idle ? idle : "1800";
  const pid_t pid = start_detached({binary, "--socket", options.socket_path, "--idle-exit", idle_exit}, log);
  if (pid < 0) throw ConnectionError("cannot start prismd: fork failed");

  // Wait for the socket to answer; notice a daemon that dies on start-up.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      throw ConnectionError("prismd (" + binary + ") exited during start-up; the end of " + log + ":\n" + tail_of(log, 10));
    }
    try {
      auto client = Client::connect_unix(options.socket_path);
      // The daemon is our child until this REPL exits: let the kernel reap it if it stops first.
      std::signal(SIGCHLD, SIG_IGN);
      return client;
    } catch (const ConnectionError&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  throw ConnectionError("prismd did not answer on " + options.socket_path + " within 15 s; see " + log);
}

}  // namespace prism::repl
