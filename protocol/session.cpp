#include "protocol/session.h"

namespace prism::protocol {

void Session::send(const json& message) {
  if (detached() || !callbacks_.send) return;
  callbacks_.send(to_wire(message));
}

void Session::close(int exit_code) {
  if (callbacks_.close) callbacks_.close(exit_code);
}

void Session::detach() {
  detached_.store(true);
  cancel_all();
}

std::shared_ptr<CancelToken> Session::start_request(const json& id) {
  auto token = std::make_shared<CancelToken>();
  std::lock_guard lock(mutex_);
  running_[id.dump()] = token;
  return token;
}

void Session::finish_request(const json& id, const CancelToken* token) {
  std::lock_guard lock(mutex_);
  auto it = running_.find(id.dump());
  if (it == running_.end() || it->second.get() != token) return;
  running_.erase(it);
  std::erase_if(progress_requests_, [&](const auto& entry) { return entry.second == id.dump(); });
}

void Session::request(const std::string& method, json params, Reply on_reply) {
  json id;
  {
    std::lock_guard lock(mutex_);
    id = "prism/" + std::to_string(next_request_++);
    pending_[id.dump()] = std::move(on_reply);
  }
  json message{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) message["params"] = std::move(params);
  send(message);
}

bool Session::take_reply(const json& id, const json& result, const json& error) {
  Reply reply;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id.dump());
    if (it == pending_.end()) return false;
    reply = std::move(it->second);
    pending_.erase(it);
  }
  if (reply) reply(result, error);
  return true;
}

void Session::bind_progress(const json& token, const json& request_id) {
  std::lock_guard lock(mutex_);
  progress_requests_[token.dump()] = request_id.dump();
}

bool Session::cancel_progress(const json& token) {
  std::lock_guard lock(mutex_);
  auto it = progress_requests_.find(token.dump());
  if (it == progress_requests_.end()) return false;
  auto run = running_.find(it->second);
  if (run == running_.end()) return false;
  run->second->cancel();
  return true;
}

bool Session::cancel_request(const json& id) {
  std::lock_guard lock(mutex_);
  auto it = running_.find(id.dump());
  if (it == running_.end()) return false;
  it->second->cancel();
  return true;
}

void Session::cancel_all() {
  std::lock_guard lock(mutex_);
  for (auto& [id, token] : running_) token->cancel();
}

size_t Session::requests_in_flight() const {
  std::lock_guard lock(mutex_);
  return running_.size();
}

void Session::remember_tune(const std::string& program, LastTune tune) {
  std::lock_guard lock(mutex_);
  last_tunes_[program] = std::move(tune);
}

std::optional<Session::LastTune> Session::last_tune(const std::string& program) const {
  std::lock_guard lock(mutex_);
  auto it = last_tunes_.find(program);
  if (it == last_tunes_.end()) return std::nullopt;
  return it->second;
}

}  // namespace prism::protocol
