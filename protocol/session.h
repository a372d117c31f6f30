// One client connection's protocol state: lifecycle, negotiated position encoding, and the
// requests it has in flight (for $/cancelRequest). The transport owns the bytes; the Session
// only ever sees whole messages.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/cancel.h"
#include "protocol/jsonrpc.h"
#include "protocol/positions.h"

namespace prism::protocol {

class Session : public std::enable_shared_from_this<Session> {
 public:
  struct Callbacks {
    // Writes one serialized message. Called from any thread; must not block for long.
    std::function<void(std::string body)> send;
    // The client sent `exit`: close the connection (and, over stdio, exit with this code).
    std::function<void(int exit_code)> close;
  };

  Session(uint64_t id, Callbacks callbacks) : id_(id), callbacks_(std::move(callbacks)) {}

  uint64_t id() const { return id_; }
  void send(const json& message);
  void close(int exit_code);
  // The connection is gone: later sends are dropped and in-flight requests are cancelled.
  void detach();
  bool detached() const { return detached_.load(); }

  // Whether the transport knows the peer is the daemon's own user (the Unix socket checked its
  // uid; stdio is the parent's). Any other peer proves it in `initialize` with the daemon's
  // token, and its connection is closed after any message that leaves it uninitialized.
  bool trusted = true;

  // Lifecycle; touched only by the thread that feeds this session's messages.
  bool initialized = false;
  bool shut_down = false;
  PositionEncoding encoding = PositionEncoding::Utf16;
  // Speaks LSP's textDocument/* (an editor): its diagnostics go out as publishDiagnostics.
  bool lsp = false;

  // In-flight requests, keyed by their id. start_request returns the token the work polls.
  std::shared_ptr<CancelToken> start_request(const json& id);
  // Forgets the request unless a later one reused its id.
  void finish_request(const json& id, const CancelToken* token);
  bool cancel_request(const json& id);
  void cancel_all();
  size_t requests_in_flight() const;

  // Requests to the client (window/workDoneProgress/create, workspace/codeLens/refresh): sends
  // one with a fresh id ("prism/N"); `on_reply` (may be empty) gets the response's result, or its
  // error object, when it arrives. Any thread.
  using Reply = std::function<void(const json& result, const json& error)>;
  void request(const std::string& method, json params, Reply on_reply);
  // A response came: runs its request's on_reply. False for an id we never sent (or answered twice).
  bool take_reply(const json& id, const json& result, const json& error);

  // What the client said it supports (initialize's capabilities).
  bool work_done_progress = false;  // window.workDoneProgress: the server may create tokens
  bool code_lens_refresh = false;   // workspace.codeLens.refreshSupport

  // A work-done token stands for the request that reports with it, so that
  // window/workDoneProgress/cancel cancels that request. Forgotten when the request finishes.
  void bind_progress(const json& token, const json& request_id);
  bool cancel_progress(const json& token);

  // This client's last tune of each program: kernel/source without bindings answers about it
  // (issue 14: results about one question name it).
  struct LastTune {
    std::map<std::string, int64_t> bindings;
    std::string target;
  };
  void remember_tune(const std::string& program, LastTune tune);
  std::optional<LastTune> last_tune(const std::string& program) const;

 private:
  uint64_t id_;
  Callbacks callbacks_;
  std::atomic<bool> detached_{false};
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<CancelToken>> running_;  // key: id.dump()
  std::map<std::string, LastTune> last_tunes_;                    // key: program
  uint64_t next_request_ = 1;
  std::map<std::string, Reply> pending_;                           // our requests; key: id.dump()
  std::map<std::string, std::string> progress_requests_;           // token.dump() → request id.dump()
};

using SessionPtr = std::shared_ptr<Session>;

}  // namespace prism::protocol
