// Running another program: feed its stdin, capture stdout/stderr and how it ended, with a hard
// time limit (the whole process group is killed), so a hung compiler or kernel costs one call.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace prism {

struct ProcessResult {
  int exit_code = -1;     // -1 when killed by a signal or the time limit
  int term_signal = 0;    // the signal that ended it, if one did
  bool timed_out = false;
  std::string out;
  std::string err;
};

// In a child between fork and exec: dies with the parent (SIGKILL when the thread that forked it
// ends, a kill -9 of the daemon included), so no compiler or kernel runner outlives prism (D13).
// `parent` is the parent's pid from before the fork; it may have died already.
void die_with_parent(pid_t parent);

// argv[0] without a '/' is looked up in PATH. `env` entries are set on top of the environment.
// The command runs in a process group of its own under a keeper process that kills the whole group
// when prism dies, so neither it nor anything it started (a compiler's linker) outlives prism.
// `cwd_fd`: a directory descriptor the command runs in (its relative paths name files in that
// very directory, whatever is renamed around it); -1: the current directory.
// Throws std::runtime_error only when the process cannot be started at all.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input = "",
                          const std::map<std::string, std::string>& env = {},
                          std::chrono::milliseconds limit = std::chrono::seconds(60), int cwd_fd = -1);

// Starts `argv` (argv[0] looked up in PATH) as a daemon of its own: a new session, stdin from
// /dev/null, stdout and stderr appended to `log` (0600), every other descriptor closed. Returns
// its pid, or -1 when fork failed; a program that cannot be executed exits 127 after saying so
// in the log.
pid_t start_detached(const std::vector<std::string>& argv, const std::string& log);

}  // namespace prism
