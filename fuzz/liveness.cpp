#include "fuzz/liveness.h"

#include <nlohmann/json.hpp>

#include <thread>

#include "fuzz/mutator.h"
#include "fuzz/socket_client.h"

namespace prism::fuzz {

namespace {

using json = nlohmann::json;

// Empty when `reply` is a correct answer to the liveness request `id`, else why not.
std::string judge(const json& reply, int id, std::optional<long> pid) {
  if (!reply.contains("result")) return "request " + std::to_string(id) + " failed: " + reply.dump();
  const json& result = reply["result"];
  if (id == 1) {
    // prism's own methods are listed under LSP's `experimental` capabilities.
    const json* methods = result.contains("capabilities") && result["capabilities"].contains("experimental")
                              ? &result["capabilities"]["experimental"]["methods"]
                              : nullptr;
    if (!methods || !methods->is_array()) return "initialize: no capabilities.experimental.methods in " + reply.dump();
    return "";
  }
  if (!result.is_object() || !result.contains("pid") || !result.contains("version")) return "daemon/status: unexpected " + reply.dump();
  if (pid && result["pid"] != *pid) return "daemon/status: pid " + result["pid"].dump() + ", expected " + std::to_string(*pid);
  return "";
}

}  // namespace

Liveness check_liveness(const std::string& socket, std::chrono::milliseconds deadline_in, std::optional<long> pid) {
  Liveness out;
  auto start = Clock::now();
  auto deadline = start + deadline_in;
  auto finish = [&](std::string why) {
    out.ok = why.empty();
    out.why = std::move(why);
    out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return out;
  };
  std::optional<Connection> c;
  while (!(c = Connection::open(socket, true)) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!c) return finish("cannot connect to " + socket);
  std::string request =
      Mutator::frame(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"fuzz-liveness"}}})") +
      Mutator::frame(R"({"jsonrpc":"2.0","id":2,"method":"daemon/status"})");
  auto patience = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (c->send(request, patience) != Connection::SendResult::Ok) return finish("the liveness request could not be written");
  for (int answered = 0; answered < 2;) {
    auto body = c->next_body(deadline);
    if (!body) return finish(c->closed() ? "the daemon closed the liveness connection" : "no answer within the deadline");
    json reply = json::parse(*body, nullptr, false);
    if (reply.is_discarded()) return finish("unparseable reply: " + body->substr(0, 200));
    if (!reply.contains("id")) continue;  // a notification
    int id = reply["id"].is_number_integer() ? reply["id"].get<int>() : -1;
    if (id != 1 && id != 2) return finish("reply with unexpected id: " + body->substr(0, 200));
    if (auto why = judge(reply, id, pid); !why.empty()) return finish(why);
    ++answered;
  }
  return finish("");
}

}  // namespace prism::fuzz
