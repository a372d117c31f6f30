// A blocking JSON-RPC client of prismd over a Unix socket, TCP, or a pair of file descriptors
// (a child's stdio). Used by the REPL and by the protocol tests.
#pragma once
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/framing.h"
#include "protocol/jsonrpc.h"

namespace prism::repl {

using json = nlohmann::json;

// The error object of a JSON-RPC response: the same type the server's handlers throw.
using RpcError = protocol::RpcFailure;

// The connection failed, closed, or timed out.
class ConnectionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The peer went away mid-conversation: a reset, a write that failed, an end of stream.
class ConnectionDropped : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

// A Unix socket answered by a process of another user: never talked to, and never a reason to
// start a daemon in its place (docs/protocol.md, "Security").
class PeerRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Client {
 public:
  using Clock = std::chrono::steady_clock;

  // Throws ConnectionError when nothing answers there, PeerRefused when a process of another
  // user does (its uid from SO_PEERCRED): nothing is sent to it.
  static std::unique_ptr<Client> connect_unix(const std::string& path);
  static std::unique_ptr<Client> connect_tcp(const std::string& host, int port);
  // Takes ownership of both descriptors (e.g. pipes to `prismd --stdio`).
  static std::unique_ptr<Client> from_fds(int read_fd, int write_fd);
  ~Client();

  // Sends a request and waits for its response; notifications that arrive meanwhile go to the
  // notification handler (or the queue). Throws RpcError for an error response, ConnectionError
  // on close or timeout. `on_sent` gets the request id right after it is written (for cancel).
  json request(const std::string& method, const json& params,
               std::chrono::milliseconds timeout = std::chrono::minutes(10),
               const std::function<void(int64_t id)>& on_sent = {});
  void notify(const std::string& method, const json& params);

  // Raw access for tests and for cancellation from another thread: writes bytes as they are.
  // Writes (send_raw, notify, request) are serialized; reads belong to one thread at a time.
  void send_raw(const std::string& bytes);
  // Reads the next message of any kind; nullopt on timeout. Throws ConnectionError on close.
  std::optional<json> read_message(std::chrono::milliseconds timeout);

  // Server-to-client notifications seen while waiting for responses.
  void on_notification(std::function<void(const json&)> handler) { handler_ = std::move(handler); }
  std::deque<json>& notifications() { return notifications_; }
  // Responses whose id matched no waiting request() (e.g. to requests written with send_raw).
  std::deque<json>& other_responses() { return other_responses_; }

  int64_t next_id() const { return next_id_; }

 private:
  Client(int read_fd, int write_fd);
  int read_fd_;
  int write_fd_;
  int64_t next_id_ = 1;
  protocol::FrameReader reader_;
  std::function<void(const json&)> handler_;
  std::deque<json> notifications_;
  std::deque<json> other_responses_;
  std::mutex write_mutex_;
};

}  // namespace prism::repl
