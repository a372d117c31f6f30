// An in-process protocol Server with capturing sessions, for conformance tests without sockets.
#pragma once
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include "daemon/worker_pool.h"
#include "engine/workspace/workspace.h"
#include "protocol/server.h"
#include "tests_common.h"

namespace prism::test {

using json = nlohmann::json;

class Peer {
 public:
  protocol::SessionPtr session;
  int exit_code = -2;  // set when the server asks to close the connection

  void push(std::string body) {
    {
      std::lock_guard lock(mutex_);
      out_.push_back(json::parse(body));
    }
    ready_.notify_all();
  }
  // Next message the server sent this peer, waiting up to `timeout` (workers reply later).
  std::optional<json> next(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !out_.empty(); })) return std::nullopt;
    json m = std::move(out_.front());
    out_.pop_front();
    return m;
  }
  size_t pending() {
    std::lock_guard lock(mutex_);
    return out_.size();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<json> out_;
};

class InProcess {
 public:
  InProcess() {
    protocol::Server::Options options;
    options.spawn = [this](std::function<void()> task) { pool_.post(std::move(task)); };
    options.stop = [this] { stopped = true; };
    server = std::make_unique<protocol::Server>(workspace, std::move(options));
  }
  ~InProcess() {
    server->cancel_all();
  }

  std::shared_ptr<Peer> connect() {
    auto peer = std::make_shared<Peer>();
    std::weak_ptr<Peer> weak = peer;
    protocol::Session::Callbacks callbacks;
    callbacks.send = [weak](std::string body) {
      if (auto p = weak.lock()) p->push(std::move(body));
    };
    callbacks.close = [weak](int code) {
      if (auto p = weak.lock()) p->exit_code = code;
    };
    peer->session = server->connect(std::move(callbacks));
    return peer;
  }

  void send(Peer& peer, const json& message) { server->receive(peer.session, message.dump()); }
  void send_raw(Peer& peer, const std::string& body) { server->receive(peer.session, body); }

  // Sends a request and returns the response with its id; notifications before it are kept in `seen`.
  json call(Peer& peer, const std::string& method, const json& params = json::object(), json id = nullptr) {
    if (id.is_null()) id = next_id_++;
    send(peer, json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
    for (;;) {
      auto m = peer.next();
      if (!m) throw std::runtime_error("no response to " + method);
      if (m->contains("id") && (*m)["id"] == id) return *m;
      seen.push_back(*m);
    }
  }
  // The result of a successful call (fails the test otherwise).
  json result(Peer& peer, const std::string& method, const json& params = json::object()) {
    json r = call(peer, method, params);
    INFO(r.dump());
    REQUIRE(r.contains("result"));
    return r["result"];
  }
  std::shared_ptr<Peer> initialized(const json& capabilities = json::object()) {
    auto peer = connect();
    result(*peer, "initialize", {{"processId", nullptr}, {"capabilities", capabilities}});
    send(*peer, {{"jsonrpc", "2.0"}, {"method", "initialized"}, {"params", json::object()}});
    return peer;
  }

  Workspace workspace;
  std::unique_ptr<protocol::Server> server;
  std::deque<json> seen;
  bool stopped = false;

 private:
  int64_t next_id_ = 1;
  // Destroyed first: workers finish before the server they call back into.
  daemon::WorkerPool pool_{2};
};

inline int error_code(const json& response) { return response.at("error").at("code").get<int>(); }

}  // namespace prism::test
