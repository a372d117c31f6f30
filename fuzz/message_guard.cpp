#include "fuzz/message_guard.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <functional>
#include <set>

namespace prism::fuzz {

namespace {

using json = nlohmann::json;

constexpr int kMaxCheckedDepth = 256;  // deeper bodies are only defanged byte by byte

const std::set<std::string> kLongMethods = {"program/run", "program/equivalent", "search/run", "tune/run", "kernel/source"};

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
}

// Caps a number at `most` (other types and values at most `most` are left to the daemon to judge).
void cap(json& object, const char* key, double most) {
  if (!object.is_object() || !object.contains(key)) return;
  json& v = object[key];
  if (v.is_number() && v.get<double>() > most) v = most == double(int64_t(most)) ? json(int64_t(most)) : json(most);
}

void cap_bindings(json& params) {
  if (!params.contains("bindings") || !params["bindings"].is_object()) return;
  for (auto& [name, value] : params["bindings"].items()) {
    if (value.is_number_integer() && value.get<double>() > 8) value = 1 + int64_t(std::hash<std::string>()(name) % 8);
  }
}

// Limits an object of limits (`key`), adding `defaults` when it is absent or null.
void cap_limits(json& params, const char* key, const json& defaults, const std::vector<std::pair<const char*, double>>& caps) {
  if (!params.contains(key) || params[key].is_null()) params[key] = defaults;
  for (const auto& [name, most] : caps) cap(params[key], name, most);
}

bool inside(const std::string& path, const std::string& dir) {
  return path.find("..") == std::string::npos && path.rfind(dir + "/", 0) == 0;
}

bool safe_uri_to_read(const std::string& uri, const std::string& temp_dir) {
  if (uri.rfind("untitled:", 0) == 0) return true;
  if (uri.rfind("file://", 0) == 0) return inside(uri.substr(7), temp_dir);
  return inside(uri, temp_dir);  // relative paths too: a daemon given by --socket runs elsewhere
}

void guard_document(json& params, const std::string& temp_dir) {
  if (!params.contains("uri") || !params["uri"].is_string()) return;
  std::string uri = params["uri"];
  bool has_text = params.contains("text") && params["text"].is_string();
  size_t h = std::hash<std::string>()(uri);
  if (!has_text) {
    if (!safe_uri_to_read(uri, temp_dir)) params["uri"] = h % 2 ? "file://" + temp_dir + "/doc.prism" : temp_dir + "/nofile.prism";
    return;
  }
  // Bounded set of documents: the daemon rewrites its state file after every edit.
  bool path_like = uri.rfind("file:", 0) == 0 || uri.empty() || uri[0] == '/' || uri[0] == '.';
  if (path_like ? !inside(uri.substr(uri.rfind("file://", 0) == 0 ? 7 : 0), temp_dir) : h % 8 != 0)
    params["uri"] = "untitled:fuzz" + std::to_string(h % 16);
}

void guard_request(json& m, const std::string& temp_dir, GuardedMessage& out) {
  if (!m.is_object() || !m.contains("method") || !m["method"].is_string()) return;
  std::string method = m["method"];
  if (method == "daemon/stop") m["method"] = method = "daemon/status";
  if (kLongMethods.count(method) && m.contains("id")) {
    out.long_request_id = m["id"].dump();
    out.long_request_method = method;
  }
  if (!m.contains("params") || !m["params"].is_object()) return;
  json& p = m["params"];
  if (method == "program/open") guard_document(p, temp_dir);
  if (method == "program/run") {
    if (p.contains("output")) p["output"] = temp_dir + "/out.npy";
    if (p.contains("inputs") && p["inputs"].is_object())
      for (auto& [name, file] : p["inputs"].items()) file = temp_dir + "/in.npy";
    else if (p.contains("inputs")) p.erase("inputs");
    cap(p, "head", 64);
  }
  if (method == "program/run" || method == "tune/run" || method == "kernel/source") cap_bindings(p);
  if (method == "search/run")
    cap_limits(p, "limits", {{"budgetSeconds", 0.3}, {"maxOps", 4}},
               {{"budgetSeconds", 0.3}, {"maxOps", 5}, {"maxKernels", 2}, {"maxAccumulators", 3}, {"threads", 2}});
  if (method == "program/equivalent")
    cap_limits(p, "limits", {{"seconds", 0.3}, {"nodes", 20000}}, {{"seconds", 0.3}, {"nodes", 20000}, {"iterations", 8}});
  if (method == "tune/run") {
    cap(p, "top", 2);
    cap(p, "threads", 2);
  }
}

// Byte-level: nothing that could spell a dangerous method or file parameter survives.
std::string defang(std::string body) {
  for (size_t i = 0; i + 6 <= body.size(); ++i) {  // \u00XX escapes of printable ASCII
    if (body[i] != '\\' || body[i + 1] != 'u' || body[i + 2] != '0' || body[i + 3] != '0') continue;
    if (std::isxdigit(static_cast<unsigned char>(body[i + 4])) && body[i + 4] >= '2' && body[i + 4] <= '7') body[i + 1] = 'x';
  }
  replace_all(body, "stop", "stoq");
  replace_all(body, "output", "outpux");
  replace_all(body, "inputs", "inputz");
  replace_all(body, "\"uri\"", "\"urj\"");
  return body;
}

}  // namespace

int json_depth(const std::string& body, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size() && deepest <= limit; ++i) {
    char c = body[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

GuardedMessage guard_message(const std::string& body, bool regrouped, const std::string& temp_dir) {
  GuardedMessage out;
  json msg = json_depth(body, kMaxCheckedDepth) <= kMaxCheckedDepth ? json::parse(body, nullptr, false) : json(json::value_t::discarded);
  if (msg.is_discarded()) {
    out.body = defang(body);
    return out;
  }
  json before = msg;
  if (msg.is_array())
    for (auto& element : msg) guard_request(element, temp_dir, out);
  else guard_request(msg, temp_dir, out);
  out.body = msg == before ? body : msg.dump(-1, ' ', false, json::error_handler_t::replace);
  if (regrouped) out.body = defang(std::move(out.body));
  return out;
}

}  // namespace prism::fuzz
