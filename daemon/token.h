// The secret a TCP client presents in `initialize` (initializationOptions.token): anyone on the
// machine can reach a loopback port, so the port alone proves nothing (issue 17, D3).
#pragma once
#include <string>

namespace prism::daemon {

// 64 hex digits from the kernel's random source (getrandom). Throws std::runtime_error when
// there is none.
std::string make_token();

// Writes the token to `path` (mode 0600, written whole) in a private directory, which is created
// or checked as such. Returns an error message, empty on success.
std::string write_token_file(const std::string& path, const std::string& token);

}  // namespace prism::daemon
