// prismd as a whole: listeners, connections, the protocol server and its workers, and shutdown
// (daemon/stop, SIGINT/SIGTERM, or the stdio client's exit).
#pragma once
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "daemon/connection.h"
#include "daemon/document_store.h"
#include "daemon/listener.h"
#include "daemon/log.h"
#include "daemon/options.h"
#include "daemon/worker_pool.h"
#include "engine/workspace/workspace.h"
#include "protocol/server.h"

namespace prism::daemon {

class Daemon {
 public:
  // Binds every listener; throws std::runtime_error (with a message for the user) when it cannot.
  Daemon(const Options& options, Logger& log);
  ~Daemon();
  // Prints the "prismd: listening on ..." line, serves until stopped, returns the exit code.
  int run();

 private:
  void add_connection(std::unique_ptr<Channel> channel, bool trusted);
  // Whether one more TCP peer may wait for its token (kMaxUnauthenticated).
  bool admit_unauthenticated();
  void clean_stale_files(const std::string& state_dir);
  void on_closed(Connection& connection, int exit_code);
  void stop(int exit_code, const std::string& why);
  // --idle-exit: checks now and then whether the daemon has had no client and no work for that long.
  void watch_idle();
  nlohmann::json status_fields() const;

  Options options_;
  Logger& log_;
  boost::asio::io_context io_;
  Workspace workspace_;
  std::unique_ptr<DocumentStore> store_;  // none over --stdio
  std::unique_ptr<protocol::Server> server_;
  std::unique_ptr<UnixListener> unix_;
  std::vector<std::unique_ptr<TcpListener>> tcp_;
  std::string token_file_;  // the TCP token's file, removed at exit; empty without TCP
  boost::asio::signal_set signals_;
  boost::asio::steady_timer stop_deadline_;
  boost::asio::steady_timer idle_timer_;
  std::optional<std::chrono::steady_clock::time_point> idle_since_;
  std::set<std::shared_ptr<Connection>> connections_;
  Connection* stdio_ = nullptr;
  static constexpr long kMaxUnauthenticated = 16;
  size_t refused_unauthenticated_ = 0;
  std::chrono::steady_clock::time_point last_refusal_log_{};
  bool stopping_ = false;
  int exit_code_ = 0;
  // Declared last, so destroyed first: workers finish before the server and workspace go away.
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace prism::daemon
