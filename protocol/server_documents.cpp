// program/open, program/change, program/close and the program/diagnostics they push.
#include "engine/util/private_files.h"
#include "protocol/convert.h"
#include "protocol/params.h"
#include "protocol/server.h"
#include "protocol/text_edits.h"
#include "protocol/uri.h"

namespace prism::protocol {

namespace {

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

void Server::mark_modified(const std::string& uri) {
  for (auto& [id, run] : runs_) {
    if (!run.uris.count(uri)) continue;
    run.modified = true;
    run.token->cancel();
  }
}

void Server::publish(const std::string& uri, const DocumentState& state, const std::string& text) {
  json per_encoding[2];
  for (auto& [id, weak] : subscribers_[uri]) {
    auto session = weak.lock();
    if (!session || session->detached()) continue;
    json& diagnostics = per_encoding[session->encoding == PositionEncoding::Utf8 ? 1 : 0];
    if (diagnostics.is_null()) diagnostics = diagnostics_json(state.diagnostics, text, session->encoding);
    session->send(make_notification("program/diagnostics",
                                    json{{"uri", state.uri}, {"version", state.version}, {"diagnostics", diagnostics}}));
  }
}

json Server::open(Session& session, const json& raw) {
  const json& params = params_object(raw);
  std::string given = require_string(params, "uri");
  if (given.empty()) throw invalid_params("uri", "'uri' must not be empty");
  auto text = optional_string(params, "text");
  int64_t version = optional_int(params, "version").value_or(0);
  bool replace = optional_bool(params, "replace").value_or(false);
  if (!text) text = read_document(given);
  std::string uri = document_uri(given);

  std::lock_guard lock(docs_mutex_);
  mark_modified(uri);
  DocumentState state = workspace_.open(uri, *text, version, replace);
  for (const auto& closed : state.replaced) {
    mark_modified(closed);
    subscribers_.erase(closed);
  }
  subscribe(uri, session);
  // Diagnostics go out before the response, so a client has them once its request returns.
  publish(uri, state, *text);
  if (options_.documents_changed) options_.documents_changed();
  return document_state_json(state, *text, session.encoding);
}

json Server::change(Session& session, const json& raw) {
  const json& params = params_object(raw);
  std::string uri = document_uri(require_string(params, "uri"));
  int64_t version = require_int(params, "version");
  std::vector<TextChange> changes = parse_changes(require_array(params, "changes"));

  std::lock_guard lock(docs_mutex_);
  auto current = workspace_.document(uri);
  auto text = workspace_.text(uri);
  if (!current || !text) throw RpcFailure(kRequestFailed, "document '" + uri + "' is not open");
  if (version <= current->version)
    throw RpcFailure(kRequestFailed, "version " + std::to_string(version) + " is not greater than the current version " +
                                         std::to_string(current->version) + " of '" + uri + "'");
  std::string updated = apply_changes(*text, changes, session.encoding);
  mark_modified(uri);
  DocumentState state = workspace_.change(uri, updated, version);
  subscribe(uri, session);
  publish(uri, state, updated);
  if (options_.documents_changed) options_.documents_changed();
  return document_state_json(state, updated, session.encoding);
}

json Server::close(Session&, const json& raw) {
  const json& params = params_object(raw);
  std::string uri = document_uri(require_string(params, "uri"));
  std::lock_guard lock(docs_mutex_);
  if (!workspace_.document(uri)) throw RpcFailure(kRequestFailed, "document '" + uri + "' is not open");
  mark_modified(uri);
  workspace_.close(uri);
  subscribers_.erase(uri);
  if (options_.documents_changed) options_.documents_changed();
  return nullptr;
}

}  // namespace prism::protocol
