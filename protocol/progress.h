// LSP work-done progress for one request: `$/progress {token, value: {kind: begin|report|end}}`
// sent to the client that asked with a `workDoneToken`. Without a token every call does nothing.
// Reports are throttled so that a fast search cannot flood a slow client.
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include "protocol/jsonrpc.h"
#include "protocol/session.h"

namespace prism::protocol {

// The request's `workDoneToken` (a string or an integer), or null when absent; InvalidParams
// naming the field otherwise.
json work_done_token(const json& params);

class WorkDoneProgress {
 public:
  WorkDoneProgress(SessionPtr session, json token,
                   std::chrono::milliseconds min_interval = std::chrono::milliseconds(100));
  // `fields` are merged into the value (counts a client may show beside the message).
  void begin(const std::string& title, const std::string& message, const json& fields = json::object());
  // Dropped when the previous report went out less than min_interval ago.
  void report(const std::string& message, std::optional<int> percentage, const json& fields = json::object());
  // Idempotent; the destructor ends a progress that was begun and not ended.
  void end(const std::string& message, const json& fields = json::object());
  ~WorkDoneProgress();

 private:
  void send(json value, const json& fields);
  SessionPtr session_;
  json token_;
  std::chrono::milliseconds min_interval_;
  std::chrono::steady_clock::time_point last_report_{};
  bool begun_ = false;
  bool ended_ = false;
};

}  // namespace prism::protocol
