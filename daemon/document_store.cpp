#include "daemon/document_store.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "engine/util/private_files.h"

#include <nlohmann/json.hpp>

namespace prism::daemon {

using json = nlohmann::json;

namespace {

constexpr int kFormat = 1;

// A file name that says which socket it belongs to: "/tmp/prism-0/prismd.sock" →
// "tmp_prism-0_prismd.sock.json".
std::string file_name_for(const std::string& socket_path) {
  std::string name;
  for (char c : socket_path) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  while (!name.empty() && name.front() == '_') name.erase(name.begin());
  return (name.empty() ? std::string("default") : name) + ".json";
}

// True when nothing is at `path` (not saved yet, or a document's file deleted since).
bool errno_missing(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) != 0 && errno == ENOENT;
}

// The store holds every open document's text: the workspace keeps them under kMaxOpenTextBytes,
// and this leaves room for JSON's escapes. A store that would be larger is not written (docs/
// protocol.md "Security"): what is saved can always be read back.
constexpr size_t kMaxStoreBytes = size_t(256) << 20;
static_assert(kMaxStoreBytes >= 4 * kMaxOpenTextBytes);

// `path` renamed to the first free "<path>.corrupt", "<path>.corrupt.1", …: never over an earlier
// one. Returns the new name, empty when it could not be moved.
std::string move_aside(const std::string& path) {
  for (int i = 0; i < 100; ++i) {
    const std::string aside = path + ".corrupt" + (i ? "." + std::to_string(i) : "");
    if (!errno_missing(aside)) continue;
    if (std::rename(path.c_str(), aside.c_str()) == 0) return aside;
    break;
  }
  return {};
}

// What is wrong with one saved document, or empty when it can be restored.
std::string check_entry(const json& doc) {
  if (!doc.is_object()) return "is not an object";
  for (const char* field : {"uri", "text"}) {
    auto it = doc.find(field);
    if (it == doc.end()) return std::string("has no '") + field + "'";
    if (!it->is_string()) return std::string("'") + field + "' must be a string, but is " + it->type_name();
  }
  if (auto it = doc.find("version"); it != doc.end() && !it->is_number_integer())
    return std::string("'version' must be an integer, but is ") + it->type_name();
  return {};
}

}  // namespace

DocumentStore::DocumentStore(const std::string& state_dir, const std::string& socket_path)
    : file_((std::filesystem::path(state_dir) / "documents" / file_name_for(socket_path)).string()) {}

size_t DocumentStore::restore(Workspace& workspace, Logger& log) {
  FileContents file = read_regular_file(file_, kMaxStoreBytes);
  if (!file.bytes && errno_missing(file_)) return 0;  // nothing saved yet
  json saved = file.bytes ? json::parse(*file.bytes, nullptr, /*allow_exceptions=*/false) : json();
  if (!file.bytes || saved.is_discarded() || !saved.is_object() || !saved.contains("format") || saved["format"] != kFormat ||
      !saved.contains("documents") || !saved["documents"].is_array()) {
    // Too large, truncated or damaged: kept aside for a look, never overwritten by the next save.
    const std::string why = !file.bytes           ? file.error
                            : saved.is_discarded() ? std::string("not JSON, perhaps truncated")
                                                   : std::string("not prism's format");
    const std::string aside = move_aside(file_);
    if (aside.empty()) frozen_ = true;
    log.line("the document store " + file_ + " is unreadable (" + why + "); " +
             (aside.empty() ? "it cannot be moved aside either, so it is left alone and no documents are saved"
                            : "moved it to " + aside + " and started with no documents"));
    return 0;
  }
  size_t restored = 0;
  const json& docs = saved["documents"];
  for (size_t i = 0; i < docs.size(); ++i) {
    const json& doc = docs[i];
    if (std::string problem = check_entry(doc); !problem.empty()) {
      log.line("skipping documents[" + std::to_string(i) + "] of " + file_ + ": it " + problem);
      continue;
    }
    std::string uri = doc["uri"].get<std::string>();
    std::string body = doc["text"].get<std::string>();
    if (uri.rfind("file://", 0) == 0) {
      // The file is the truth when it is still a readable regular file; a FIFO or a device
      // (saved by a hostile client) is never read, or a restart could hang or exhaust memory (D6).
      FileContents current = read_regular_file(uri.substr(7), kMaxDocumentBytes);
      if (current.bytes)
        body = std::move(*current.bytes);
      else if (!errno_missing(uri.substr(7)))
        log.line("restoring " + uri + " from its saved text: " + current.error);
    }
    try {
      workspace.open(uri, body, doc.value("version", int64_t{0}));
    } catch (const std::exception& e) {
      log.line("skipping documents[" + std::to_string(i) + "] of " + file_ + ": " + e.what());
      continue;
    }
    ++restored;
  }
  log.line("restored " + std::to_string(restored) + " open document(s) from " + file_);
  return restored;
}

void DocumentStore::save(const Workspace& workspace, Logger& log) {
  std::lock_guard lock(mutex_);
  if (frozen_) return;  // restore() said why
  json docs = json::array();
  for (const auto& uri : workspace.documents()) {
    auto state = workspace.document(uri);
    auto text = workspace.text(uri);
    if (!state || !text) continue;  // closed meanwhile
    docs.push_back({{"uri", uri}, {"version", state->version}, {"text", *text}});
  }
  std::string dir = std::filesystem::path(file_).parent_path().string();
  if (std::string problem = ensure_private_dir(dir); !problem.empty()) {
    log.line("cannot save the open documents: " + problem);
    return;
  }
  // Written whole (temp file, fsync, rename): a crash mid-write leaves the previous file.
  std::string body = json{{"format", kFormat}, {"documents", docs}}.dump(1, ' ', false, json::error_handler_t::replace);
  if (body.size() > kMaxStoreBytes) {
    log.line("cannot save the open documents: they make " + std::to_string(body.size()) + " bytes, more than the store's limit of " +
             std::to_string(kMaxStoreBytes) + "; the previous store is kept");
    return;
  }
  if (std::string problem = write_file_atomically(file_, body); !problem.empty())
    log.line("cannot save the open documents: " + problem);
}

}  // namespace prism::daemon
