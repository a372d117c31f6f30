// `prismd --stdio --attach`: an editor's language server that is the user's shared daemon. The
// process relays the editor's stdio, bytes as they are, to the daemon's Unix socket (starting that
// daemon when none answers), so a program open in the editor is the one the REPL runs and tunes.
#pragma once
#include <string>

#include "daemon/options.h"

namespace prism::daemon {

// Relays until either side closes; returns the exit code (0, or 1 when no daemon can be reached,
// with the reason on stderr).
int attach_stdio(const Options& options);

}  // namespace prism::daemon
