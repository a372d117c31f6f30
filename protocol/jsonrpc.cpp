#include "protocol/jsonrpc.h"

#include <algorithm>

namespace prism::protocol {

RpcFailure invalid_params(const std::string& field, const std::string& message) {
  return RpcFailure(kInvalidParams, message, json{{"field", field}});
}

namespace {
bool valid_id(const json& id) { return id.is_string() || id.is_number_integer() || id.is_null(); }

// The deepest nesting of [ and { outside strings, stopping once it passes `limit`. A linear scan
// without recursion, so any body can be measured; malformed JSON is the parser's to report.
int nesting_depth(std::string_view body, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) break;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// nlohmann's text names the byte and what it expected: worth passing on to the client.
std::string without_prefix(const std::string& what) {
  size_t colon = what.find("] ");
  return colon == std::string::npos ? what : what.substr(colon + 2);
}
}  // namespace

ParseResult parse_message(std::string_view body) {
  if (nesting_depth(body, kMaxJsonDepth) > kMaxJsonDepth)
    return make_error(nullptr, kParseError,  // by append: GCC 12 misreports the + chain (PR 105329)
                      std::string("invalid JSON: arrays and objects nested deeper than ").append(std::to_string(kMaxJsonDepth)).append(" levels"));
  json msg;
  try {
    msg = json::parse(body.begin(), body.end());
  } catch (const json::parse_error& e) {
    return make_error(nullptr, kParseError, "invalid JSON: " + without_prefix(e.what()));
  } catch (const json::exception& e) {
    // out_of_range: a number beyond double range (1e400). It is this message's problem alone.
    return make_error(nullptr, kParseError, "invalid JSON: " + without_prefix(e.what()));
  }
  // Batches are valid JSON-RPC 2.0 but LSP never uses them; answering one error keeps the
  // one-response-per-frame rule simple for clients.
  if (msg.is_array()) return make_error(nullptr, kInvalidRequest, "batches are not supported");
  if (!msg.is_object()) return make_error(nullptr, kInvalidRequest, "a message must be a JSON object");

  json id = nullptr;
  bool has_id = msg.contains("id");
  if (has_id) {
    if (!valid_id(msg["id"])) return make_error(nullptr, kInvalidRequest, "id must be a string, an integer or null");
    id = msg["id"];
  }
  auto jsonrpc = msg.find("jsonrpc");
  if (jsonrpc == msg.end() || *jsonrpc != "2.0")
    return make_error(id, kInvalidRequest, "jsonrpc must be \"2.0\"");
  auto method = msg.find("method");
  if (method == msg.end()) {
    if (has_id && (msg.contains("result") || msg.contains("error"))) return ClientResponse{id, msg.value("result", json()), msg.value("error", json())};
    return make_error(id, kInvalidRequest, "a request needs a method");
  }
  if (!method->is_string()) return make_error(id, kInvalidRequest, "method must be a string");
  Incoming in;
  in.method = method->get<std::string>();
  // "params": null is read as absent: LSP clients commonly send it for shutdown and exit.
  if (auto params = msg.find("params"); params != msg.end() && !params->is_null()) {
    if (!params->is_object() && !params->is_array())
      return make_error(id, kInvalidRequest, "params must be an object or an array");
    in.params = *params;
  }
  if (has_id) in.id = id;
  return in;
}

json make_result(const json& id, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json make_error(const json& id, int code, const std::string& message, const json& data) {
  json error{{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = data;
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

json make_notification(const std::string& method, json params) {
  return json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

std::string to_wire(const json& message) { return message.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace prism::protocol
