#include "daemon/options.h"

#include <optional>
#include <utility>

#include <boost/asio/ip/address.hpp>
#include <algorithm>
#include <charconv>
#include <optional>

namespace prism::daemon {

std::string usage() {
  return "usage: prismd [--stdio [--attach] | --socket PATH] [--listen tcp:127.0.0.1:PORT] [--token-file FILE]\n"
         "              [--max-message-bytes N] [--log-file FILE] [--state-dir DIR] [--idle-exit SECONDS]\n"
         "              [--auth-timeout SECONDS]\n"
         "              [--help] [--version]\n"
         "\n"
         "Serves the prism protocol (JSON-RPC 2.0 with LSP framing, see docs/protocol.md).\n"
         "  --stdio                 serve one client on stdin/stdout; exit when it exits\n"
         "  --attach                with --stdio: relay that client to the user's shared daemon (on\n"
         "                          --socket or the default socket; started when none answers), so an\n"
         "                          editor's programs are the ones the REPL sees\n"
         "  --socket PATH           listen on this Unix socket (default: $PRISM_SOCKET,\n"
         "                          $XDG_RUNTIME_DIR/prism/prismd.sock, /tmp/prism-<uid>/prismd.sock)\n"
         "  --listen tcp:HOST:PORT  also listen on TCP; HOST must be loopback (127.0.0.0/8, ::1,\n"
         "                          localhost); PORT 0 picks a free port. May be repeated. A TCP client\n"
         "                          must send the daemon's token as initializationOptions.token\n"
         "  --token-file FILE       where to write that token (mode 0600; default: tcp-PORT.token in\n"
         "                          the socket's directory, which is private to this user)\n"
         "  --auth-timeout SECONDS  close a TCP connection that has not presented the token by then\n"
         "                          (default 10; fractions allowed)\n"
         "  --max-message-bytes N   largest accepted message body (default 67108864)\n"
         "  --memory-budget SIZE    most memory one run, search or tune may use, estimated before it\n"
         "                          starts (bytes, or with K, M, G; default: half the machine's memory)\n"
         "  --log-file FILE         append the log here instead of stderr (with --stdio the default\n"
         "                          is prismd-stdio.log in the state directory)\n"
         "  --idle-exit SECONDS     exit after this long with no clients and no work, keeping the\n"
         "                          state on disk (default 0: never; the REPL starts its daemons with\n"
         "                          $PRISM_IDLE_EXIT, else 1800)\n"
         "  --state-dir DIR         keep the open documents here, so they come back after a restart\n"
         "                          (default: $XDG_STATE_HOME/prism, ~/.local/state/prism); not with --stdio\n"
         "Once ready, prismd prints 'prismd: listening on ...' to stderr.\n";
}

std::variant<TcpEndpoint, std::string> parse_tcp_endpoint(const std::string& spec) {
  const std::string bad = "--listen " + spec + ": expected tcp:HOST:PORT with a loopback HOST";
  if (spec.rfind("tcp:", 0) != 0) return bad;
  std::string rest = spec.substr(4);
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return bad;
  std::string host = rest.substr(0, colon), port_text = rest.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535)
    return "--listen " + spec + ": '" + port_text + "' is not a port number";
  if (host == "localhost") host = "127.0.0.1";
  boost::system::error_code error;
  auto address = boost::asio::ip::make_address(host, error);
  if (error) return bad;
  if (!address.is_loopback())
    return "--listen " + spec + ": " + host + " is not a loopback address; prismd listens only on loopback";
  return TcpEndpoint{address.to_string(), static_cast<uint16_t>(port)};
}

std::variant<Options, std::string> parse_options(int argc, const char* const* argv) {
  Options options;
  bool socket_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool inline_value = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inline_value = true;
    }
    auto take_value = [&]() -> std::optional<std::string> {
      if (inline_value) return value;
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (arg == "--version") {
      options.version = true;
    } else if (arg == "--stdio") {
      options.stdio = true;
    } else if (arg == "--attach") {
      options.attach = true;
    } else if (arg == "--socket" || arg == "--listen" || arg == "--max-message-bytes" || arg == "--log-file" ||
               arg == "--state-dir" || arg == "--token-file" || arg == "--memory-budget" || arg == "--idle-exit" ||
               arg == "--auth-timeout") {
      auto v = take_value();
      if (!v || v->empty()) return arg + " needs a value";
      if (arg == "--socket") {
        options.socket = *v;
        socket_given = true;
      } else if (arg == "--listen") {
        auto endpoint = parse_tcp_endpoint(*v);
        if (auto* error = std::get_if<std::string>(&endpoint)) return *error;
        options.listen.push_back(std::get<TcpEndpoint>(endpoint));
      } else if (arg == "--log-file") {
        options.log_file = *v;
      } else if (arg == "--state-dir") {
        options.state_dir = *v;
      } else if (arg == "--token-file") {
        options.token_file = *v;
      } else if (arg == "--idle-exit") {
        int64_t n = -1;
        auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
        if (ec != std::errc() || end != v->data() + v->size() || n < 0)
          return "--idle-exit " + *v + ": expected a number of seconds (0: never)";
        options.idle_exit_s = n;
      } else if (arg == "--auth-timeout") {
        double seconds = 0;
        auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), seconds);
        if (ec != std::errc() || end != v->data() + v->size() || !(seconds > 0) || seconds > 86400)
          return "--auth-timeout " + *v + ": expected a positive number of seconds";
        options.auth_timeout_ms = std::max<int64_t>(1, static_cast<int64_t>(seconds * 1000));
      } else if (arg == "--memory-budget") {
        int64_t n = 0;
        auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
        std::string unit(end, static_cast<const char*>(v->data() + v->size()));
        int shift = unit.empty() ? 0 : unit == "K" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : -1;
        if (ec != std::errc() || n <= 0 || shift < 0 || n > (int64_t(1) << (62 - shift)))
          return "--memory-budget " + *v + ": expected a positive size such as 8G, 512M or 1048576";
        options.memory_budget = n << shift;
      } else {
        size_t n = 0;
        auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
        if (ec != std::errc() || end != v->data() + v->size() || n == 0)
          return "--max-message-bytes " + *v + ": expected a positive number of bytes";
        options.max_message_bytes = n;
      }
    } else {
      return "unknown argument '" + std::string(argv[i]) + "'";
    }
  }
  if (options.attach && !options.stdio) return "--attach works with --stdio only";
  if (options.stdio && socket_given && !options.attach) return "--stdio and --socket cannot be combined (but with --attach)";
  return options;
}

}  // namespace prism::daemon
