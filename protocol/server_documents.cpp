// program/open, program/change, program/close, the program/diagnostics they push, and the
// announcements to other clients: program/replaced (another client's definition took a
// program's place) and program/reloaded (a file changed on disk and was read again).
#include <sys/stat.h>

#include "engine/util/private_files.h"
#include "protocol/convert.h"
#include "protocol/params.h"
#include "protocol/server.h"
#include "protocol/text_edits.h"
#include "protocol/uri.h"

namespace prism::protocol {

namespace {

// A file's modification time and size; size -1 when it cannot be read.
DiskStamp stamp_of(const std::string& path) {
  struct stat st {};
  DiskStamp stamp;
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    stamp.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    stamp.size = int64_t(st.st_size);
  }
  return stamp;
}

std::string read_document(const std::string& uri) {
  auto path = local_path(uri);
  if (!path)
    throw RpcFailure(kRequestFailed, "cannot read '" + uri + "': only file:// URIs and paths can be read; send 'text'");
  // A FIFO or a device is refused at once: a read that blocks would stall this client's I/O.
  FileContents file = read_regular_file(*path, kMaxDocumentBytes);
  if (!file.bytes) throw RpcFailure(kRequestFailed, file.error);
  return std::move(*file.bytes);
}

}  // namespace

void Server::subscribe(const std::string& uri, Session& session) {
  subscribers_[uri][session.id()] = session.weak_from_this();
}

void Server::announce(const std::string& uri, const std::string& method, const json& params, uint64_t except) {
  auto it = subscribers_.find(uri);
  if (it == subscribers_.end()) return;
  for (auto& [id, weak] : it->second) {
    auto session = weak.lock();
    if (id == except || !session || session->detached()) continue;
    session->send(make_notification(method, params));
  }
}

void Server::refresh_from_disk() {
  std::lock_guard lock(docs_mutex_);
  for (const std::string& uri : workspace_.documents()) {
    if (client_text_.count(uri)) continue;
    const std::optional<std::string> path = uri.rfind("file://", 0) == 0 ? local_path(uri) : std::nullopt;
    if (!path) continue;
    const DiskStamp stamp = stamp_of(*path);
    if (stamp.size < 0 || disk_[uri] == stamp) continue;  // gone (its last text stays), or unchanged
    disk_[uri] = stamp;
    FileContents file = read_regular_file(*path, kMaxDocumentBytes);
    const std::optional<std::string> current = workspace_.text(uri);
    const std::optional<DocumentState> before = workspace_.document(uri);
    if (!file.bytes || !current || !before || *file.bytes == *current) continue;
    DocumentState state;
    try {
      state = workspace_.change(uri, *file.bytes, before->version + 1);
    } catch (const Error& e) {
      log("cannot reload " + uri + ": " + e.what());  // it keeps its last text
      continue;
    }
    mark_modified(uri);
    log("reloaded " + uri + ": it changed on disk");
    publish(uri, state, *file.bytes);
    announce(uri, "program/reloaded", {{"uri", uri}, {"version", state.version}, {"programs", state.programs}}, 0);
    if (options_.documents_changed) options_.documents_changed();
  }
}

void Server::mark_modified(const std::string& uri) {
  for (auto& [id, run] : runs_) {
    if (!run.uris.count(uri)) continue;
    run.modified = true;
    run.token->cancel();
  }
}

void Server::send_diagnostics(Session& session, const DocumentState& state, const json& diagnostics) {
  // An LSP client hears textDocument/publishDiagnostics, the REPL program/diagnostics: one payload.
  const char* method = session.lsp ? "textDocument/publishDiagnostics" : "program/diagnostics";
  session.send(make_notification(method, json{{"uri", state.uri}, {"version", state.version}, {"diagnostics", diagnostics}}));
}

void Server::publish(const std::string& uri, const DocumentState& state, const std::string& text) {
  json per_encoding[2];  // converted once per position encoding, however many sessions listen
  for (auto& [id, weak] : subscribers_[uri]) {
    auto session = weak.lock();
    if (!session || session->detached()) continue;
    json& diagnostics = per_encoding[session->encoding == PositionEncoding::Utf8 ? 1 : 0];
    if (diagnostics.is_null()) diagnostics = diagnostics_json(state.diagnostics, text, session->encoding);
    send_diagnostics(*session, state, diagnostics);
  }
}

Server::Edited Server::open_document(Session& session, const std::string& uri, const std::string& text, int64_t version, bool replace,
                                     bool reject_errors, bool from_disk) {
  std::lock_guard lock(docs_mutex_);
  // Re-opening a document with the text it has changes nothing and cancels nothing.
  if (auto current = workspace_.text(uri); current && *current == text) {
    if (auto state = workspace_.document(uri)) {
      subscribe(uri, session);
      send_diagnostics(session, *state, diagnostics_json(state->diagnostics, text, session.encoding));
      return {*state, text, /*unchanged=*/true};
    }
  }
  DocumentState state = workspace_.open(uri, text, version, replace, reject_errors);
  if (state.rejected) return {state, text};
  out_of_sync_.erase(uri);  // the whole text again: in sync
  mark_modified(uri);
  if (from_disk) {
    client_text_.erase(uri);
    if (auto path = local_path(uri)) disk_[uri] = stamp_of(*path);
  } else {
    client_text_.insert(uri);
  }
  // Other clients that held this document, or one this definition replaced, hear of it.
  json notice = {{"uri", uri}, {"replacedBy", uri}, {"programs", state.programs}};
  announce(uri, "program/replaced", notice, session.id());
  for (const auto& closed : state.replaced) {
    mark_modified(closed);
    notice["uri"] = closed;
    announce(closed, "program/replaced", notice, session.id());
    subscribers_.erase(closed);
    disk_.erase(closed);
    client_text_.erase(closed);
  }
  subscribe(uri, session);
  // Diagnostics go out before the response, so a client has them once its request returns.
  publish(uri, state, text);
  if (options_.documents_changed) options_.documents_changed();
  return {state, text};
}

Server::Edited Server::change_document(Session& session, const std::string& uri, int64_t version, const std::vector<TextChange>& changes) {
  std::lock_guard lock(docs_mutex_);
  auto current = workspace_.document(uri);
  auto text = workspace_.text(uri);
  if (!current || !text) throw RpcFailure(kRequestFailed, "document '" + uri + "' is not open");
  if (version <= current->version)
    throw RpcFailure(kRequestFailed, "version " + std::to_string(version) + " is not greater than the current version " +
                                         std::to_string(current->version) + " of '" + uri + "'");
  std::string updated = apply_changes(*text, changes, session.encoding);
  client_text_.insert(uri);  // a client's buffer from now on
  mark_modified(uri);
  DocumentState state = workspace_.change(uri, updated, version);
  subscribe(uri, session);
  publish(uri, state, updated);
  if (options_.documents_changed) options_.documents_changed();
  return {state, updated};
}

void Server::refuse_edit(Session& session, const std::string& uri, const std::string& why) {
  const std::string words = "prism did not take the last edit of this document (" + why +
                            "); until it is closed and opened again, or saved, prism works on its older text";
  {
    std::lock_guard lock(docs_mutex_);
    auto state = workspace_.document(uri);
    auto text = workspace_.text(uri);
    if (!state || !text) return;  // not open: there is nothing to be out of sync with
    out_of_sync_.insert(uri);
    state->diagnostics.insert(state->diagnostics.begin(), Diagnostic{uri, {}, Severity::Error, words});
    publish(uri, *state, *text);
  }
  session.send(make_notification("window/showMessage", {{"type", 1}, {"message", uri + ": " + words + "."}}));
  log_about(session, "refused an edit of " + uri + ": " + why);
}

void Server::close_document(const std::string& uri) {
  std::lock_guard lock(docs_mutex_);
  if (!workspace_.document(uri)) throw RpcFailure(kRequestFailed, "document '" + uri + "' is not open");
  mark_modified(uri);
  workspace_.close(uri);
  out_of_sync_.erase(uri);
  subscribers_.erase(uri);
  disk_.erase(uri);
  client_text_.erase(uri);
  if (options_.documents_changed) options_.documents_changed();
}

json Server::open(Session& session, const json& raw) {
  const json& params = params_object(raw);
  std::string given = require_string(params, "uri");
  if (given.empty()) throw invalid_params("uri", "'uri' must not be empty");
  auto text = optional_string(params, "text");
  int64_t version = optional_int(params, "version").value_or(0);
  bool replace = optional_bool(params, "replace").value_or(false);
  // A typed definition that does not compile is answered with its diagnostics and not kept.
  bool reject_errors = optional_bool(params, "rejectOnError").value_or(false);
  const bool from_disk = !text;
  if (!text) text = read_document(given);
  Edited e = open_document(session, document_uri(given), *text, version, replace, reject_errors, from_disk);
  json out = document_state_json(e.state, e.text, session.encoding);
  if (e.unchanged) out["unchanged"] = true;
  if (e.state.rejected) out["rejected"] = true;
  return out;
}

json Server::change(Session& session, const json& raw) {
  const json& params = params_object(raw);
  std::string uri = document_uri(require_string(params, "uri"));
  int64_t version = require_int(params, "version");
  std::vector<TextChange> changes = parse_changes(require_array(params, "changes"));
  Edited e = change_document(session, uri, version, changes);
  return document_state_json(e.state, e.text, session.encoding);
}

json Server::close(Session&, const json& raw) {
  const json& params = params_object(raw);
  close_document(document_uri(require_string(params, "uri")));
  return nullptr;
}

}  // namespace prism::protocol
