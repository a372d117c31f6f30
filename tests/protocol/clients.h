// A protocol client of a test daemon, connected and past `initialize`.
#pragma once
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "repl/client.h"

namespace prism::test {

inline std::unique_ptr<repl::Client> connect_initialized(const std::string& socket) {
  auto client = repl::Client::connect_unix(socket);
  client->request("initialize", {{"processId", ::getpid()}, {"capabilities", nlohmann::json::object()}},
                  std::chrono::seconds(120));
  client->notify("initialized", nlohmann::json::object());
  return client;
}

}  // namespace prism::test
