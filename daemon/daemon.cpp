#include "daemon/daemon.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <thread>

#include "daemon/token.h"
#include "engine/backend/runner/runner.h"
#include "engine/search/search_store.h"
#include "engine/util/cache.h"
#include "engine/util/private_files.h"
#include "protocol/endpoint.h"

namespace prism::daemon {

namespace asio = boost::asio;

Daemon::Daemon(const Options& options, Logger& log)
    : options_(options), log_(log), signals_(io_, SIGINT, SIGTERM), stop_deadline_(io_), idle_timer_(io_) {
  size_t threads = std::max(2u, std::thread::hardware_concurrency() / 2);
  pool_ = std::make_unique<WorkerPool>(threads, [this](const std::string& line) { log_.line(line); });

  protocol::Server::Options server_options;
  server_options.spawn = [this](std::function<void()> task) { pool_->post(std::move(task)); };
  server_options.stop = [this] { asio::post(io_, [this] { stop(0, "daemon/stop"); }); };
  server_options.status = [this] { return status_fields(); };
  server_options.log = [this](const std::string& line) { log_.line(line); };
  server_options.peer_log = [this](const std::string& line) { log_.peer_line(line); };
  workspace_.set_log([this](const std::string& line) { log_.line(line); });
  if (options_.memory_budget > 0) workspace_.set_memory_budget(options_.memory_budget);
  // The tuning DB is worth keeping for every daemon, an editor's too.
  const std::string state_dir = options_.state_dir.empty() ? protocol::state_dir() : options_.state_dir;
  if (std::string problem = ensure_private_dir(state_dir); !problem.empty())
    throw std::runtime_error("the state directory is unsafe: " + problem);
  workspace_.set_storage(state_dir, "");
  clean_stale_files(state_dir);
  std::string socket_path;
  if (!options_.stdio) {
    // An editor over stdio owns its documents; a socket daemon keeps them across restarts.
    socket_path = options_.socket.empty() ? protocol::default_socket_path() : options_.socket;
    store_ = std::make_unique<DocumentStore>(state_dir, socket_path);
    server_options.documents_changed = [this] { store_->save(workspace_, log_); };
  }
  for (const auto& endpoint : options_.listen) tcp_.push_back(std::make_unique<TcpListener>(io_, endpoint));
  if (!tcp_.empty()) {
    // The token file lives beside the socket (or where the socket would be, under --stdio).
    std::string dir = std::filesystem::path(options_.stdio ? protocol::default_socket_path() : socket_path)
                          .parent_path()
                          .string();
    token_file_ = !options_.token_file.empty()
                      ? options_.token_file
                      : dir + "/tcp-" + std::to_string(tcp_.front()->port()) + ".token";
    server_options.token = make_token();
    if (std::string problem = write_token_file(token_file_, server_options.token, options_.token_file.empty()); !problem.empty())
      throw std::runtime_error(problem);
    server_options.token_file = token_file_;
  }
  try {
    server_ = std::make_unique<protocol::Server>(workspace_, std::move(server_options));
    if (!options_.stdio) {
      if (std::string problem = protocol::prepare_socket_dir(socket_path); !problem.empty())
        throw std::runtime_error(problem);
      unix_ = std::make_unique<UnixListener>(io_, socket_path);
      // Only once the socket is ours: a second daemon refused above must not touch the store.
      store_->restore(workspace_, log_);
    }
  } catch (...) {
    // A daemon that does not start leaves no token behind (the destructor does not run).
    if (!token_file_.empty()) ::unlink(token_file_.c_str());
    throw;
  }
}

void Daemon::clean_stale_files(const std::string& state_dir) {
  // What a daemon killed mid-write left behind: temp files whose writer is gone (D13).
  size_t removed = 0;
  for (const std::string& dir : {state_dir, state_dir + "/tune", search::SearchStore::build_dir(state_dir + "/searches"), state_dir + "/documents",
                                 prism_cache_dir("kernels"), prism_cache_dir("ptx")})
    if (!dir.empty()) removed += remove_stale_temp_files(dir);
  removed += backend::remove_stale_runner_dirs();
  if (removed > 0) log_.line("removed " + std::to_string(removed) + " temp file(s) left by a stopped prism");
  if (int old = search::SearchStore::prune_other_builds(state_dir + "/searches"); old > 0)
    log_.line("removed the search stores of " + std::to_string(old) + " other prism build(s), none written for a week");
}

Daemon::~Daemon() {
  // Cancel long work so the pool's join is quick.
  if (server_) server_->cancel_all();
  pool_.reset();
  if (!token_file_.empty()) ::unlink(token_file_.c_str());
}

nlohmann::json Daemon::status_fields() const {
  nlohmann::json out{{"socket", unix_ ? nlohmann::json(unix_->path()) : nlohmann::json(nullptr)}};
  if (!tcp_.empty()) {
    out["tcp"] = tcp_.front()->address();
    out["tokenFile"] = token_file_;
  }
  if (options_.stdio) out["stdio"] = true;
  return out;
}

int Daemon::run() {
  signals_.async_wait([this](const boost::system::error_code& error, int signal) {
    if (!error) stop(0, signal == SIGINT ? "SIGINT" : "SIGTERM");
  });
  std::string where = options_.stdio ? "stdio" : "";
  if (unix_) {
    unix_->start([this](std::unique_ptr<Channel> channel, bool trusted) { add_connection(std::move(channel), trusted); },
                 [this](const std::string& why) { log_.line(why); });
    where = "unix:" + unix_->path();
  }
  for (auto& tcp : tcp_) {
    tcp->start([this](std::unique_ptr<Channel> channel, bool trusted) { add_connection(std::move(channel), trusted); });
    where += (where.empty() ? "" : " ") + tcp->address();
  }
  // Tests and the REPL wait for this line: the sockets accept connections from here on. (Over
  // stdio alone there is nothing to wait for, and an editor would show the line as an error.)
  if (unix_ || !tcp_.empty()) std::cerr << "prismd: listening on " << where << std::endl;
  log_.line("started (pid " + std::to_string(::getpid()) + ", version " PRISM_VERSION ")");
  if (options_.stdio) {
    // fd 1 now carries only protocol messages: anything else that prints to stdout (a library, a
    // stray debug line) lands on stderr instead of corrupting the stream.
    int out = ::dup(STDOUT_FILENO);
    int in = ::dup(STDIN_FILENO);
    if (out < 0 || in < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
      throw std::runtime_error("cannot take over stdin/stdout");
    add_connection(make_stdio_channel(io_, in, out), /*trusted=*/true);
  }
  if (options_.idle_exit_s > 0) watch_idle();
  // The last guard: a handler that throws loses its own work, never the loop every client shares.
  for (;;) {
    try {
      io_.run();
      break;
    } catch (const std::exception& e) {
      log_.line(std::string("internal error in the event loop: ") + e.what());
    }
  }
  log_.line("stopped");
  return exit_code_;
}

void Daemon::add_connection(std::unique_ptr<Channel> channel, bool trusted) {
  if (stopping_) {
    channel->close();
    return;
  }
  if (!trusted && !admit_unauthenticated()) {
    channel->close();
    return;
  }
  bool stdio = channel->describe() == "stdio";
  ConnectionLimits limits;
  limits.max_message_bytes = options_.max_message_bytes;
  limits.authentication_deadline = std::chrono::milliseconds(options_.auth_timeout_ms);
  auto connection = std::make_shared<Connection>(io_, std::move(channel), trusted, *server_, limits, log_,
                                                 [this](Connection& c, int exit_code) { on_closed(c, exit_code); });
  connections_.insert(connection);
  if (stdio) stdio_ = connection.get();
  connection->start();
}

bool Daemon::admit_unauthenticated() {
  // At most kMaxUnauthenticated TCP peers wait for their token at once (docs/protocol.md
  // "Security"): another local user cannot take every descriptor, and the owner's own clients
  // (the Unix socket, a TCP client once a slot is free) are served meanwhile.
  const auto waiting = std::count_if(connections_.begin(), connections_.end(), [](const auto& c) { return !c->authenticated(); });
  if (waiting < kMaxUnauthenticated) return true;
  const auto now = std::chrono::steady_clock::now();
  ++refused_unauthenticated_;
  if (now - last_refusal_log_ >= std::chrono::seconds(1)) {  // a flood is one line a second
    log_.line("refused " + std::to_string(refused_unauthenticated_) + " TCP connection(s): " + std::to_string(kMaxUnauthenticated) +
              " are already waiting to present the token");
    refused_unauthenticated_ = 0;
    last_refusal_log_ = now;
  }
  return false;
}

void Daemon::on_closed(Connection& connection, int exit_code) {
  bool was_stdio = &connection == stdio_;
  bool shut_down = connection.session() && connection.session()->shut_down;
  // Erase later: the connection is still on the call stack.
  asio::post(io_, [this, c = connection.shared_from_this()] {
    connections_.erase(c);
    if (stopping_ && connections_.empty()) stop_deadline_.cancel();
  });
  if (was_stdio) {
    stdio_ = nullptr;
    // LSP: exit code 0 after shutdown, 1 otherwise; an editor that just closed the pipe gets the same.
    stop(exit_code >= 0 ? exit_code : (shut_down ? 0 : 1), "the stdio client left");
  }
}

void Daemon::watch_idle() {
  const auto idle = std::chrono::seconds(options_.idle_exit_s);
  idle_timer_.expires_after(std::min<std::chrono::steady_clock::duration>(idle / 4 + std::chrono::milliseconds(250), std::chrono::seconds(10)));
  idle_timer_.async_wait([this, idle](const boost::system::error_code& error) {
    if (error || stopping_) return;
    const auto now = std::chrono::steady_clock::now();
    if (!connections_.empty() || pool_->pending() > 0) idle_since_.reset();
    else if (!idle_since_) idle_since_ = now;
    if (idle_since_ && now - *idle_since_ >= idle) {
      // Documents and tunes are on disk already: the next REPL starts a daemon that has them.
      stop(0, "idle for " + std::to_string(options_.idle_exit_s) + " s with no clients");
      return;
    }
    watch_idle();
  });
}

void Daemon::stop(int exit_code, const std::string& why) {
  if (stopping_) return;
  stopping_ = true;
  exit_code_ = exit_code;
  log_.line("stopping: " + why);
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  idle_timer_.cancel();
  if (unix_) unix_->close();
  for (auto& tcp : tcp_) tcp->close();
  server_->cancel_all();
  for (const auto& c : std::set<std::shared_ptr<Connection>>(connections_)) c->close_after_flush();
  if (connections_.empty()) return;
  // A client that does not read its last replies must not keep the daemon alive.
  stop_deadline_.expires_after(std::chrono::seconds(2));
  stop_deadline_.async_wait([this](const boost::system::error_code& error) {
    if (error) return;
    for (const auto& c : std::set<std::shared_ptr<Connection>>(connections_)) c->close_now();
  });
}

}  // namespace prism::daemon
