// The secret a TCP client presents in `initialize` (initializationOptions.token): anyone on the
// machine can reach a loopback port, so the port alone proves nothing (issue 17, D3).
#pragma once
#include <string>

namespace prism::daemon {

// 64 hex digits from the kernel's random source (getrandom). Throws std::runtime_error when
// there is none.
std::string make_token();

// Writes the token to `path` (mode 0600, written whole, through the directory's descriptor).
// `own_dir`: the directory is prism's own (beside the socket), created private or tightened to
// 0700. Otherwise (`--token-file`) it is the user's: it must be theirs and writable by nobody
// else, and it is never changed (`--token-file ~/x.token` leaves `~` as it was). Returns an
// error message, empty on success.
std::string write_token_file(const std::string& path, const std::string& token, bool own_dir);

}  // namespace prism::daemon
