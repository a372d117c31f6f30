// Finds the running daemon, or starts one in the background so that a new user just types `prism`.
#pragma once
#include <memory>
#include <string>

#include "repl/client.h"

namespace prism::repl {

struct LaunchOptions {
  std::string socket_path;  // where to connect (and where a started daemon listens), or
                            // "tcp:HOST:PORT" for a daemon's loopback listener (never started)
  bool autostart = true;    // start prismd when nothing answers
  std::string prismd;       // the daemon binary; empty: next to this program, then $PATH
};

// Connects to the daemon at options.socket_path, starting it first when allowed and needed.
// Throws ConnectionError with a message that says what to do.
std::unique_ptr<Client> connect_or_start(const LaunchOptions& options);

// For "tcp:HOST:PORT": the token the daemon wrote for that listener, from $PRISM_TOKEN_FILE,
// else tcp-PORT.token in the user's runtime directory (where prismd writes it beside its
// socket). Empty for a Unix socket. Throws ConnectionError when it cannot be read.
std::string token_for(const std::string& socket_path);

}  // namespace prism::repl
