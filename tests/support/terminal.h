// Test support: a program run on a pseudo-terminal of a given size, as a person's terminal runs
// it (isatty is true, TIOCGWINSZ answers), its output read back as the terminal received it.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace prism::test {

struct TerminalResult {
  int exit_code = -1;
  std::string out;  // what the terminal received, stdout and stderr together, "\r\n" as "\n"
};

// Runs argv with `env` added to this process's environment, stdin, stdout and stderr on a
// terminal of `columns` x 50; gives up (exit_code -1) after `timeout_s`.
TerminalResult run_on_terminal(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, int columns,
                               double timeout_s = 120);

}  // namespace prism::test
