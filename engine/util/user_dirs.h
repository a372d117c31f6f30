// Where the current user's files go, without ever falling back to a shared directory such as
// /tmp that another user could create first.
#pragma once
#include <string>

namespace prism {

// $HOME, else the home directory of the passwd entry; empty when neither exists.
std::string home_dir();

// The directory for sockets and tokens: $XDG_RUNTIME_DIR/prism, else /run/user/<uid>/prism when
// that directory is ours, else <home>/.local/state/prism/run. Empty when there is no home either.
std::string user_runtime_dir();

}  // namespace prism
