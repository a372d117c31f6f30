// The protocol server: JSON-RPC 2.0 messages of many sessions mapped onto one engine Workspace
// (clangd's ClangdLSPServer, thin). No sockets: a transport hands it whole message bodies and
// gives each session a way to send. Thread-safe; long requests run on `Options::spawn`.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/workspace/workspace.h"
#include "protocol/framing.h"
#include "protocol/jsonrpc.h"
#include "protocol/session.h"
#include "protocol/text_edits.h"

namespace prism::protocol {

// A file as last read: its modification time and size (-1: not readable).
struct DiskStamp {
  int64_t mtime_ns = 0, size = -1;
  bool operator==(const DiskStamp&) const = default;
};

class Server {
 public:
  struct Options {
    // Runs long work (program/run) away from the caller; without one it runs inline.
    std::function<void(std::function<void()>)> spawn;
    // daemon/stop: called after its reply has been handed to the session.
    std::function<void()> stop;
    // Fields the transport adds to daemon/status ({socket, tcp}).
    std::function<json()> status;
    // One line per error response and per notable event.
    std::function<void(const std::string&)> log;
    // The same about a session that has not authenticated (a TCP peer before its token), which
    // anyone on the machine can cause: the daemon rate-limits these. Unset: `log`.
    std::function<void(const std::string&)> peer_log;
    // After every open/change/close, in edit order (called under the document lock).
    std::function<void()> documents_changed;
    // The secret an untrusted session (TCP) presents as initializationOptions.token, and the file
    // that holds it (named in the error, so the user knows where to look). Empty: no such
    // session can initialize.
    std::string token;
    std::string token_file;
  };

  Server(Workspace& workspace, Options options);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // `trusted`: the transport vouches that the peer is the daemon's user (Session::trusted).
  SessionPtr connect(Session::Callbacks callbacks, bool trusted = true);
  // One message body, in arrival order per session.
  void receive(const SessionPtr& session, std::string_view body);
  // A framing problem on the session's stream: BadHeader → ParseError, Oversize → InvalidRequest.
  void frame_error(const SessionPtr& session, const FrameEvent& event);
  // The connection closed: cancels its requests and forgets its diagnostics subscriptions.
  void disconnect(const SessionPtr& session);
  // Cancels every request in flight (daemon shutdown).
  void cancel_all();
  size_t clients() const;

  // Registers a synchronous method (the built-in ones are registered this way too).
  using Method = std::function<json(Session& session, const json& params)>;
  void add_method(const std::string& name, Method method);

 private:
  using Notification = std::function<void(Session& session, const json& params)>;
  using AsyncMethod = std::function<void(const SessionPtr& session, const Incoming& message)>;
  // Whether a method's question is about programs, answered from the files as they are on disk
  // now (refreshed first), or from the workspace as it is.
  enum class Reads { Workspace, Disk };
  // What follows a method's reply.
  enum class Then { Nothing, StopDaemon };
  struct Entry {
    Method method;
    Notification notification;
    AsyncMethod async;
    Reads reads = Reads::Workspace;
    Then then = Then::Nothing;
  };

  // The built-in methods, one bind line each (clangd's LSPBinder is the model).
  void register_builtins();
  // A request answered at once, from the session and its params or from its params alone.
  void bind(const char* name, json (Server::*fn)(Session&, const json&), Reads reads = Reads::Workspace, Then then = Then::Nothing);
  void bind(const char* name, json (Server::*fn)(const json&), Reads reads = Reads::Workspace, Then then = Then::Nothing);
  // A request answered later (a long one, on Options::spawn).
  void bind(const char* name, void (Server::*fn)(const SessionPtr&, const Incoming&), Reads reads = Reads::Workspace);
  // A notification.
  void bind(const char* name, void (Server::*fn)(Session&, const json&));
  // receive() without its guard; sets `id` as soon as the message's id is known.
  void receive_guarded(const SessionPtr& session, std::string_view body, json& id);
  void dispatch(const SessionPtr& session, const Incoming& message);
  json error_reply(const Session& session, const Incoming& message, int code, const std::string& text,
                   const json& data = nullptr);
  void log(const std::string& line) const;
  // A line about `session`: through peer_log while it has not authenticated.
  void log_about(const Session& session, const std::string& line) const;

  // Lifecycle and daemon.
  json initialize(Session& session, const json& params);
  // Throws Unauthorized unless an untrusted session's params carry the daemon's token.
  void check_token(const Session& session, const json& params) const;
  json status();
  void cancel_request(Session& session, const json& params);
  // The lifecycle's and the daemon's small methods (server.cpp).
  json shutdown(Session& session, const json& params);
  void initialized(Session& session, const json& params);
  void exit_session(Session& session, const json& params);
  void cancel_progress(Session& session, const json& params);
  json daemon_status(const json& params);
  json daemon_stop(const json& params);
  json list_programs(const json& params);
  json egraph_stats(const json& params);
  // Documents.
  json open(Session& session, const json& params);
  json change(Session& session, const json& params);
  json close(Session& session, const json& params);
  // The document methods' work, shared by program/* and LSP's textDocument/* (server_lsp.cpp).
  // Each takes docs_mutex_.
  struct Edited {
    DocumentState state;
    std::string text;
    bool unchanged = false;  // re-opened with the text it had: nothing changed, nothing cancelled
  };
  Edited open_document(Session& session, const std::string& uri, const std::string& text, int64_t version, bool replace,
                       bool reject_errors, bool from_disk);
  Edited change_document(Session& session, const std::string& uri, int64_t version, const std::vector<TextChange>& changes);
  void close_document(const std::string& uri);
  // An editor's edit (didChange) that prism could not take: its buffer and the daemon's text now
  // differ, so the document is out of sync until it is opened again or saved with its text. The
  // editor is told at once (window/showMessage, and an error diagnostic at the top of the
  // document) and later changes to it are dropped. Takes docs_mutex_.
  void refuse_edit(Session& session, const std::string& uri, const std::string& why);
  // Sends the diagnostics to every session that opened or changed `uri` (each in its dialect,
  // send_diagnostics). Caller holds docs_mutex_.
  void publish(const std::string& uri, const DocumentState& state, const std::string& text);
  void send_diagnostics(Session& session, const DocumentState& state, const json& diagnostics);
  void subscribe(const std::string& uri, Session& session);
  // Sends `method` with `params` to the sessions subscribed to `uri` but `except` (0: none).
  // Caller holds docs_mutex_.
  void announce(const std::string& uri, const std::string& method, const json& params, uint64_t except);
  // Re-reads the file:// documents prism reads itself (not an editor's) that changed on disk
  // since, and announces them (program/reloaded). Takes docs_mutex_.
  void refresh_from_disk();
  // LSP (server_lsp.cpp): the document lifecycle as notifications, and the language features.
  void did_open(Session& session, const json& params);
  void did_change(Session& session, const json& params);
  void did_close(Session& session, const json& params);
  void did_save(Session& session, const json& params);
  json hover(Session& session, const json& params);
  json definition(Session& session, const json& params);
  json document_symbol(Session& session, const json& params);
  json references(Session& session, const json& params);
  json inlay_hint(Session& session, const json& params);
  json completion(Session& session, const json& params);
  json signature_help(Session& session, const json& params);
  json formatting(Session& session, const json& params);
  // Code lenses (server_lens.cpp): "search" and "tune DIMS" on each program, run through
  // workspace/executeCommand as search/run and tune/run are, and refreshed in every editor
  // when any client's search or tune finishes.
  static json lens_commands();
  json code_lens(Session& session, const json& params);
  void execute_command(const SessionPtr& session, const Incoming& message);
  // Asks each editor that allows it to fetch its lenses again (workspace/codeLens/refresh).
  void refresh_lenses();
  // Queries.
  json list();
  json show(const json& params);
  void run(const SessionPtr& session, const Incoming& message);
  void equivalent(const SessionPtr& session, const Incoming& message);
  void search(const SessionPtr& session, const Incoming& message);
  // search/run's and tune/run's work for `params` (theirs, or a lens command's argument),
  // reporting to `token` when not null.
  void start_search(const SessionPtr& session, const Incoming& message, const json& params, json token);
  void start_tune(const SessionPtr& session, const Incoming& message, const json& params, json token);
  json candidates(const json& params);
  void tune(const SessionPtr& session, const Incoming& message);
  json tune_results(const json& params);
  void batch(const SessionPtr& session, const Incoming& message);
  json export_tuning_db(const json& params);
  json import_tuning_db(const json& params);
  void kernel_source(const SessionPtr& session, const Incoming& message);
  void kernel_library(const SessionPtr& session, const Incoming& message);
  // Runs `work` on Options::spawn as a cancellable request; its answer becomes ContentModified
  // when a document defining one of `programs` changes meanwhile.
  void long_request(const SessionPtr& session, const Incoming& message, std::vector<std::string> programs,
                    std::function<json(const CancelToken&)> work);

  Workspace& workspace_;
  Options options_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::map<std::string, Entry> methods_;

  mutable std::mutex sessions_mutex_;
  uint64_t next_session_id_ = 1;
  std::map<uint64_t, std::weak_ptr<Session>> sessions_;

  // Serializes document edits so that diagnostics go out in version order, and guards the maps.
  mutable std::mutex docs_mutex_;
  std::map<std::string, std::map<uint64_t, std::weak_ptr<Session>>> subscribers_;
  // What was last read of each file:// document on disk, and the documents whose text a client
  // sent (an editor's buffer, never re-read from disk).
  std::map<std::string, DiskStamp> disk_;
  std::set<std::string> client_text_;
  // Documents whose last edit was refused (refuse_edit): their later changes are dropped.
  std::set<std::string> out_of_sync_;
  // Runs in flight by the uri that defines their program: an edit of that uri stops them early
  // (their answer is ContentModified, not a stale result).
  struct ActiveRun {
    std::set<std::string> uris;
    std::shared_ptr<CancelToken> token;
    bool modified = false;
  };
  uint64_t next_run_ = 1;
  std::map<uint64_t, ActiveRun> runs_;
  // Stops the requests on programs defined by `uri`, before the edit reaches the engine (whose run may
  // hold the workspace). Caller holds docs_mutex_.
  void mark_modified(const std::string& uri);
};

}  // namespace prism::protocol
