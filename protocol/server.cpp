#include "protocol/server.h"

#include "protocol/convert.h"

#include <unistd.h>

#include "protocol/params.h"

namespace prism::protocol {

Server::Server(Workspace& workspace, Options options) : workspace_(workspace), options_(std::move(options)) {
  register_builtins();
}

SessionPtr Server::connect(Session::Callbacks callbacks, bool trusted) {
  std::lock_guard lock(sessions_mutex_);
  auto session = std::make_shared<Session>(next_session_id_++, std::move(callbacks));
  session->trusted = trusted;
  sessions_[session->id()] = session;
  return session;
}

void Server::disconnect(const SessionPtr& session) {
  session->detach();
  {
    std::lock_guard lock(sessions_mutex_);
    sessions_.erase(session->id());
  }
  std::lock_guard lock(docs_mutex_);
  for (auto& [uri, subscribers] : subscribers_) subscribers.erase(session->id());
}

void Server::cancel_all() {
  std::lock_guard lock(sessions_mutex_);
  for (auto& [id, weak] : sessions_)
    if (auto session = weak.lock()) session->cancel_all();
}

size_t Server::clients() const {
  std::lock_guard lock(sessions_mutex_);
  return sessions_.size();
}

void Server::add_method(const std::string& name, Method method) { methods_[name] = Entry{std::move(method), {}, {}}; }

namespace {
// Client text quoted in a log line or an error is clipped: one message must not write megabytes
// of log (fuzz finding F1).
std::string clipped(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  return text.substr(0, limit) + "... (" + std::to_string(text.size()) + " bytes)";
}
}  // namespace

void Server::log(const std::string& line) const {
  if (options_.log) options_.log(clipped(line, 2048));
}

void Server::log_about(const Session& session, const std::string& line) const {
  const std::string text = "client " + std::to_string(session.id()) + ": " + line;
  if (!session.trusted && !session.initialized && options_.peer_log) options_.peer_log(clipped(text, 2048));
  else log(text);
}

void Server::frame_error(const SessionPtr& session, const FrameEvent& event) {
  int code = event.kind == FrameEvent::Kind::Oversize ? kInvalidRequest : kParseError;
  log_about(*session, std::to_string(code) + " " + event.error);
  session->send(make_error(nullptr, code, event.error));
  // Before the token a frame error ends the connection like any other message (docs/protocol.md
  // "Security"): bad headers must not buy an unauthenticated peer log lines and memory.
  if (!session->trusted && !session->initialized) {
    log_about(*session, "closed: not authenticated");
    session->close(1);
  }
}

void Server::receive(const SessionPtr& session, std::string_view body) {
  // The guard per request: whatever escapes the handling of one message (a bug, bad_alloc) is
  // answered as InternalError and logged; the session and every other client carry on.
  json id = nullptr;
  try {
    receive_guarded(session, body, id);
  } catch (const std::exception& e) {
    log_about(*session, std::string("internal error: ") + e.what());
    session->send(make_error(id, kInternalError, std::string("internal error: ") + e.what()));
  }
}

void Server::receive_guarded(const SessionPtr& session, std::string_view body, json& id) {
  ParseResult parsed = parse_message(body);
  if (auto* reply = std::get_if<json>(&parsed)) {
    log_about(*session, std::to_string((*reply)["error"]["code"].get<int>()) + " " + (*reply)["error"]["message"].get<std::string>());
    session->send(*reply);
    if (!session->trusted && !session->initialized) session->close(1);
    return;
  }
  if (auto* response = std::get_if<ClientResponse>(&parsed)) {
    if (!session->take_reply(response->id, response->result, response->error))
      log_about(*session, "ignored a response to no request of ours (id " + clipped(response->id.dump(), 200) + ")");
    else if (!response->error.is_null())
      log_about(*session, "our request " + clipped(response->id.dump(), 200) + " failed: " + clipped(response->error.dump(), 400));
    return;
  }
  const Incoming& message = std::get<Incoming>(parsed);
  if (message.id) id = *message.id;
  dispatch(session, message);
  // An unauthenticated peer gets one answer, then the door (after the reply is written).
  if (!session->trusted && !session->initialized) {
    log_about(*session, "closed: not authenticated");
    session->close(1);
  }
}

json Server::error_reply(const Session& session, const Incoming& message, int code, const std::string& text,
                         const json& data) {
  log_about(session, message.method + ": " + std::to_string(code) + " " + text);
  return make_error(message.id.value_or(nullptr), code, text, data);
}

void Server::dispatch(const SessionPtr& session, const Incoming& message) {
  const bool notification = message.is_notification();
  auto reply = [&](const json& response) {
    if (!notification) session->send(response);
  };

  // Lifecycle gates (LSP): nothing but initialize before it, nothing but exit after shutdown.
  if (message.method != "exit") {
    if (!session->initialized && message.method != "initialize") {
      if (!notification)
        reply(error_reply(*session, message, kServerNotInitialized,
                          "the server is not initialized; send 'initialize' first"));
      return;
    }
    if (session->shut_down) {
      if (!notification)
        reply(error_reply(*session, message, kInvalidRequest, "the server is shut down; only 'exit' is accepted"));
      return;
    }
  }

  auto it = methods_.find(message.method);
  if (it == methods_.end()) {
    // Unknown notifications are ignored, "$/" ones included (LSP).
    if (!notification)
      reply(error_reply(*session, message, kMethodNotFound, "unknown method '" + clipped(message.method, 200) + "'"));
    return;
  }
  const Entry& entry = it->second;
  try {
    // A question about programs sees the files as they are on disk now.
    if (!notification && entry.reads == Reads::Disk) refresh_from_disk();
    if (entry.async) {
      entry.async(session, message);
    } else if (entry.notification) {
      // A notification method sent as a request still gets an answer (null).
      entry.notification(*session, message.params);
      if (!notification) reply(make_result(*message.id, nullptr));
    } else {
      json result = entry.method(*session, message.params);
      reply(make_result(message.id.value_or(nullptr), std::move(result)));
      if (entry.then == Then::StopDaemon && options_.stop) options_.stop();
    }
  } catch (const RpcFailure& e) {
    reply(error_reply(*session, message, e.code(), e.what(), e.data()));
    // A notification has no answer: its client hears of the failure as a log message.
    if (notification) session->send(make_notification("window/logMessage", {{"type", 1}, {"message", message.method + ": " + e.what()}}));
  } catch (const Error& e) {
    int code = e.kind() == Error::Kind::Cancelled ? kRequestCancelled : kRequestFailed;
    reply(error_reply(*session, message, code, e.what(), error_data(e)));
  } catch (const std::exception& e) {
    // A bug in prismd or the engine; the session carries on.
    reply(error_reply(*session, message, kInternalError, std::string("internal error: ") + e.what()));
  }
}

void Server::register_builtins() {
  using R = Reads;
  bind("initialize", &Server::initialize);
  bind("initialized", &Server::initialized);
  bind("shutdown", &Server::shutdown);
  bind("exit", &Server::exit_session);
  bind("$/cancelRequest", &Server::cancel_request);
  bind("window/workDoneProgress/cancel", &Server::cancel_progress);
  bind("daemon/status", &Server::daemon_status);
  bind("daemon/stop", &Server::daemon_stop, R::Workspace, Then::StopDaemon);  // after its reply is handed over
  bind("program/open", &Server::open, R::Disk);
  bind("program/change", &Server::change, R::Disk);
  bind("program/close", &Server::close, R::Disk);
  bind("program/list", &Server::list_programs, R::Disk);
  bind("program/show", &Server::show, R::Disk);
  bind("program/run", &Server::run, R::Disk);
  bind("program/equivalent", &Server::equivalent, R::Disk);
  bind("search/run", &Server::search, R::Disk);
  bind("search/candidates", &Server::candidates, R::Disk);
  bind("tune/run", &Server::tune, R::Disk);
  bind("tune/results", &Server::tune_results, R::Disk);
  bind("batch/run", &Server::batch);
  bind("tuningDb/export", &Server::export_tuning_db);
  bind("tuningDb/import", &Server::import_tuning_db);
  bind("kernel/source", &Server::kernel_source, R::Disk);
  bind("kernel/library", &Server::kernel_library, R::Disk);
  bind("egraph/stats", &Server::egraph_stats);
  bind("textDocument/didOpen", &Server::did_open);
  bind("textDocument/didChange", &Server::did_change);
  bind("textDocument/didClose", &Server::did_close);
  bind("textDocument/didSave", &Server::did_save);
  bind("textDocument/hover", &Server::hover);
  bind("textDocument/definition", &Server::definition);
  bind("textDocument/documentSymbol", &Server::document_symbol);
  bind("textDocument/references", &Server::references);
  bind("textDocument/inlayHint", &Server::inlay_hint);
  bind("textDocument/completion", &Server::completion);
  bind("textDocument/signatureHelp", &Server::signature_help);
  bind("textDocument/codeLens", &Server::code_lens);
  bind("textDocument/formatting", &Server::formatting);
  bind("workspace/executeCommand", &Server::execute_command);
}

void Server::bind(const char* name, json (Server::*fn)(Session&, const json&), Reads reads, Then then) {
  methods_[name] = Entry{[this, fn](Session& s, const json& p) { return (this->*fn)(s, p); }, {}, {}, reads, then};
}

void Server::bind(const char* name, json (Server::*fn)(const json&), Reads reads, Then then) {
  methods_[name] = Entry{[this, fn](Session&, const json& p) { return (this->*fn)(p); }, {}, {}, reads, then};
}

void Server::bind(const char* name, void (Server::*fn)(const SessionPtr&, const Incoming&), Reads reads) {
  methods_[name] = Entry{{}, {}, [this, fn](const SessionPtr& s, const Incoming& m) { (this->*fn)(s, m); }, reads};
}

void Server::bind(const char* name, void (Server::*fn)(Session&, const json&)) {
  methods_[name] = Entry{{}, [this, fn](Session& s, const json& p) { (this->*fn)(s, p); }, {}};
}

json Server::shutdown(Session& session, const json&) {
  session.shut_down = true;
  return nullptr;
}

void Server::initialized(Session&, const json&) {}

void Server::exit_session(Session& session, const json&) { session.close(session.shut_down ? 0 : 1); }

void Server::cancel_progress(Session& session, const json& params) {
  if (const json* token = params.is_object() ? find_field(params, "token") : nullptr) session.cancel_progress(*token);
}

json Server::daemon_status(const json&) { return status(); }

json Server::daemon_stop(const json&) { return nullptr; }

json Server::list_programs(const json& params) {
  params_object(params);
  return list();
}

json Server::egraph_stats(const json& params) {
  params_object(params);
  return egraph_stats_json(workspace_.egraph_stats());
}

void Server::check_token(const Session& session, const json& params) const {
  if (session.trusted) return;
  const std::string where = options_.token_file.empty() ? std::string("the daemon's token file")
                                                        : "the file " + options_.token_file;
  const json* options = find_field(params, "initializationOptions");
  const json* token = options && options->is_object() ? find_field(*options, "token") : nullptr;
  if (!token || !token->is_string())
    throw RpcFailure(kUnauthorized, "this connection needs the daemon's token: send initializationOptions.token, read from " +
                                        where + " (readable only by the daemon's user)");
  // Constant time in the token's length: the comparison reveals nothing of how much matched.
  const std::string& given = token->get_ref<const std::string&>();
  unsigned char diff = options_.token.empty() || given.size() != options_.token.size();
  for (size_t i = 0; i < given.size() && i < options_.token.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ options_.token[i]);
  if (diff) throw RpcFailure(kUnauthorized, "wrong token: read it from " + where);
}

json Server::initialize(Session& session, const json& raw) {
  if (session.initialized) throw RpcFailure(kInvalidRequest, "initialize may be sent only once per connection");
  const json& params = params_object(raw);
  check_token(session, params);
  if (const json* pid = find_field(params, "processId"); pid && !pid->is_number_integer())
    throw invalid_params("processId", "'processId' must be an integer or null");
  optional_object(params, "clientInfo");
  PositionEncoding encoding = PositionEncoding::Utf16;
  if (const json* caps = optional_object(params, "capabilities")) {
    if (const json* general = optional_object(*caps, "general", "capabilities")) {
      if (find_field(*general, "positionEncodings")) {
        const json& encodings = require_array(*general, "positionEncodings", "capabilities.general");
        for (size_t i = 0; i < encodings.size(); ++i) {
          if (!encodings[i].is_string())
            throw invalid_params("capabilities.general.positionEncodings[" + std::to_string(i) + "]",
                                 "position encodings must be strings");
          if (encodings[i] == "utf-8") encoding = PositionEncoding::Utf8;
        }
      }
    }
  }
  // What the client lets the server ask of it (server-made progress tokens, lens refreshes).
  if (const json* caps = optional_object(params, "capabilities")) {
    const json* window = find_field(*caps, "window");
    const json* progress = window && window->is_object() ? find_field(*window, "workDoneProgress") : nullptr;
    session.work_done_progress = progress && progress->is_boolean() && progress->get<bool>();
    const json* ws = find_field(*caps, "workspace");
    const json* lens = ws && ws->is_object() ? find_field(*ws, "codeLens") : nullptr;
    const json* refresh = lens && lens->is_object() ? find_field(*lens, "refreshSupport") : nullptr;
    session.code_lens_refresh = refresh && refresh->is_boolean() && refresh->get<bool>();
  }
  session.initialized = true;
  session.encoding = encoding;
  // LSP's ServerCapabilities; prism's own methods (the REPL's) are listed under `experimental`.
  json methods = json::array();
  for (const auto& [name, entry] : methods_) methods.push_back(name);
  json capabilities = {{"positionEncoding", encoding_name(encoding)},
                       {"textDocumentSync", {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
                       {"hoverProvider", true},
                       {"definitionProvider", true},
                       {"documentSymbolProvider", true},
                       {"referencesProvider", true},
                       {"inlayHintProvider", true},
                       {"completionProvider", {{"triggerCharacters", json::array()}}},
                       {"signatureHelpProvider", {{"triggerCharacters", {"(", ","}}, {"retriggerCharacters", {"="}}}},
                       {"codeLensProvider", {{"resolveProvider", false}}},
                       {"documentFormattingProvider", true},
                       {"executeCommandProvider", {{"commands", lens_commands()}}},
                       {"experimental", {{"methods", methods}}}};
  return json{{"capabilities", capabilities}, {"serverInfo", {{"name", "prismd"}, {"version", PRISM_VERSION}}}};
}

json Server::status() {
  auto uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  json out{{"version", PRISM_VERSION},
           {"pid", static_cast<int64_t>(::getpid())},
           {"uptimeSeconds", uptime},
           {"clients", clients()},
           {"documents", workspace_.documents().size()},
           {"targets", target_status_json(workspace_.targets())},
           {"socket", nullptr}};
  if (options_.status) {
    json extra = options_.status();
    if (extra.is_object()) out.update(extra);
  }
  return out;
}

void Server::cancel_request(Session& session, const json& params) {
  if (!params.is_object()) return;
  auto id = params.find("id");
  if (id == params.end() || !(id->is_string() || id->is_number_integer())) return;
  session.cancel_request(*id);
}

}  // namespace prism::protocol
