// JSON-RPC 2.0 envelopes: error codes, parsing an incoming body, building outgoing messages.
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

namespace prism::protocol {

using json = nlohmann::json;

// JSON-RPC 2.0 and LSP error codes (docs/protocol.md, "Errors").
enum ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kServerNotInitialized = -32002,
  kUnauthorized = -32000,  // prism's: a TCP client without the daemon's token
  kRequestCancelled = -32800,
  kContentModified = -32801,
  kRequestFailed = -32803,
};

// Thrown by handlers to answer with a specific error; anything else becomes InternalError.
class RpcFailure : public std::runtime_error {
 public:
  RpcFailure(int code, const std::string& message, json data = nullptr)
      : std::runtime_error(message), code_(code), data_(std::move(data)) {}
  int code() const { return code_; }
  const json& data() const { return data_; }

 private:
  int code_;
  json data_;
};

// -32602 with data.field naming the offending param ("bindings.n", "changes[1].range").
RpcFailure invalid_params(const std::string& field, const std::string& message);

// A well-formed request or notification.
struct Incoming {
  std::string method;
  json params;             // object, array, or null when absent
  std::optional<json> id;  // absent: a notification; present: string, integer or null
  bool is_notification() const { return !id.has_value(); }
};

// A response the client sent to one of our requests (Session::request): `error` is null on success.
struct ClientResponse {
  json id;
  json result;
  json error;
};

// Arrays and objects nested deeper than this are refused before parsing (a ParseError for that
// message alone): copying, printing and destroying a JSON value recurse once per level, and no
// method's params come near it.
constexpr int kMaxJsonDepth = 128;

// Parses one message body. On failure the variant holds the complete error response to send.
// Never throws: bad JSON, numbers beyond double range and nesting beyond kMaxJsonDepth are errors.
using ParseResult = std::variant<Incoming, ClientResponse, json>;
ParseResult parse_message(std::string_view body);

json make_result(const json& id, json result);
json make_error(const json& id, int code, const std::string& message, const json& data = nullptr);
json make_notification(const std::string& method, json params);

// Serializes for the wire; invalid UTF-8 (from file contents, say) is replaced rather than thrown on.
std::string to_wire(const json& message);

}  // namespace prism::protocol
