#include "protocol/progress.h"

#include <algorithm>

#include "protocol/params.h"

namespace prism::protocol {

json work_done_token(const json& params) {
  const json* token = find_field(params, "workDoneToken");
  if (!token) return nullptr;
  if (!token->is_string() && !token->is_number_integer())
    throw invalid_params("workDoneToken", "'workDoneToken' must be a string or an integer");
  return *token;
}

WorkDoneProgress::WorkDoneProgress(SessionPtr session, json token, std::chrono::milliseconds min_interval)
    : session_(std::move(session)), token_(std::move(token)), min_interval_(min_interval) {}

WorkDoneProgress::~WorkDoneProgress() {
  if (begun_ && !ended_) end("stopped");
}

void WorkDoneProgress::send(json value, const json& fields) {
  if (token_.is_null() || !session_) return;
  for (const auto& [k, v] : fields.items()) value[k] = v;
  session_->send(make_notification("$/progress", {{"token", token_}, {"value", std::move(value)}}));
}

void WorkDoneProgress::begin(const std::string& title, const std::string& message, const json& fields) {
  if (begun_) return;
  begun_ = true;
  last_report_ = std::chrono::steady_clock::now();
  send({{"kind", "begin"}, {"title", title}, {"message", message}, {"cancellable", true}, {"percentage", 0}}, fields);
}

void WorkDoneProgress::report(const std::string& message, std::optional<int> percentage, const json& fields) {
  if (!begun_ || ended_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_report_ < min_interval_) return;
  last_report_ = now;
  json value = {{"kind", "report"}, {"message", message}};
  if (percentage) value["percentage"] = std::clamp(*percentage, 0, 100);
  send(std::move(value), fields);
}

void WorkDoneProgress::end(const std::string& message, const json& fields) {
  if (!begun_ || ended_) return;
  ended_ = true;
  send({{"kind", "end"}, {"message", message}}, fields);
}

}  // namespace prism::protocol
