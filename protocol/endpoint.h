// Where the daemon listens by default and where per-user state lives. Shared by prismd and prism.
#pragma once
#include <string>

namespace prism::protocol {

// $PRISM_SOCKET, else <user_runtime_dir()>/prismd.sock ($XDG_RUNTIME_DIR/prism, /run/user/<uid>/prism,
// ~/.local/state/prism/run), else /tmp/prism-<uid>/prismd.sock when there is no home at all.
std::string default_socket_path();
// Creates the socket's directory with mode 0700 when missing, and refuses (returns an error
// message) when it exists but belongs to another user or is open to others. Empty on success.
std::string prepare_socket_dir(const std::string& socket_path);
// $XDG_STATE_HOME/prism, else ~/.local/state/prism (created on demand, mode 0700); empty when
// there is no home.
std::string state_dir();

}  // namespace prism::protocol
