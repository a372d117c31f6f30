// prismd's command line.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace prism::daemon {

struct TcpEndpoint {
  std::string address;  // a loopback address: "127.0.0.1" (also for "localhost"), "::1"
  uint16_t port = 0;    // 0: the kernel picks a free port
};

struct Options {
  bool stdio = false;
  bool attach = false;  // with --stdio: relay to the shared daemon on `socket` (daemon/attach.h)
  std::string socket;  // empty: protocol::default_socket_path() (unless --stdio)
  std::vector<TcpEndpoint> listen;
  size_t max_message_bytes = 64u << 20;
  std::string log_file;  // empty: stderr
  std::string state_dir;  // where open documents are kept across restarts; empty: protocol::state_dir()
  int64_t memory_budget = 0;  // bytes one request may use; 0: half the machine's memory
  std::string token_file;  // where the TCP token goes; empty: tcp-PORT.token beside the socket
  int64_t idle_exit_s = 0;  // exit after this long with no clients and no work; 0: never
  int64_t auth_timeout_ms = 10000;  // a TCP client that has not presented the token by then is closed
  bool help = false;
  bool version = false;
};

// Options, or the message that explains what is wrong with the command line.
std::variant<Options, std::string> parse_options(int argc, const char* const* argv);
// "tcp:127.0.0.1:PORT", "tcp:localhost:0", "tcp:[::1]:PORT"; only loopback hosts are accepted.
std::variant<TcpEndpoint, std::string> parse_tcp_endpoint(const std::string& spec);
std::string usage();

}  // namespace prism::daemon
