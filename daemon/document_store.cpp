#include "daemon/document_store.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

DocumentStore::DocumentStore(const std::string& state_dir, const std::string& socket_path)
    : file_((std::filesystem::path(state_dir) / "documents" / file_name_for(socket_path)).string()) {}

size_t DocumentStore::restore(Workspace& workspace, Logger& log) {
  auto text = read_file(file_);
  if (!text) return 0;
  json saved = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (saved.is_discarded() || !saved.is_object() || saved.value("format", 0) != kFormat ||
      !saved.contains("documents") || !saved["documents"].is_array()) {
    log.line("ignoring unreadable document store " + file_);
    return 0;
  }
  size_t restored = 0;
  for (const auto& doc : saved["documents"]) {
    if (!doc.is_object() || !doc.contains("uri") || !doc["uri"].is_string() || !doc.contains("text") ||
        !doc["text"].is_string())
      continue;
    std::string uri = doc["uri"].get<std::string>();
    std::string body = doc["text"].get<std::string>();
    if (uri.rfind("file://", 0) == 0) {
      if (auto current = read_file(uri.substr(7))) body = *current;
    }
    int64_t version = doc.value("version", int64_t{0});
    workspace.open(uri, body, version);
    ++restored;
  }
  log.line("restored " + std::to_string(restored) + " open document(s) from " + file_);
  return restored;
}

void DocumentStore::save(const Workspace& workspace, Logger& log) {
  std::lock_guard lock(mutex_);
  json docs = json::array();
  for (const auto& uri : workspace.documents()) {
    auto state = workspace.document(uri);
    auto text = workspace.text(uri);
    if (!state || !text) continue;  // closed meanwhile
    docs.push_back({{"uri", uri}, {"version", state->version}, {"text", *text}});
  }
  std::error_code ec;
  auto dir = std::filesystem::path(file_).parent_path();
  std::filesystem::create_directories(dir, ec);
  ::chmod(dir.c_str(), 0700);
  // Write then rename: a crash mid-write leaves the previous file, never half of one.
  std::string temp = file_ + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << json{{"format", kFormat}, {"documents", docs}}.dump(1, ' ', false, json::error_handler_t::replace);
    if (!out) {
      log.line("cannot write the document store " + temp);
      return;
    }
  }
  std::filesystem::rename(temp, file_, ec);
  if (ec) log.line("cannot replace the document store " + file_ + ": " + ec.message());
}

}  // namespace prism::daemon
