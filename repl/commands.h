// The REPL's commands: one table that is the dispatch (each row's handler), `help` and tab
// completion.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "repl/format.h"

namespace prism::repl {

class Session;
struct CommandOutput;

struct CommandSpec {
  enum class Arg { None, Program, Path, Subcommand };
  // What runs the command: a Session member given the words after the name.
  using Handler = CommandOutput (Session::*)(const std::vector<std::string>& args);
  std::string name;
  std::string usage;    // "run NAME DIM=VALUE... [--seed S] [--in X=x.npy] [--out o.npy]"
  std::string summary;  // one line for the `help` overview
  std::string details;  // what `help NAME` adds
  Arg first_arg = Arg::None;  // what tab completion offers after the name
  std::vector<std::string> subcommands = {};
  Handler handler = nullptr;  // Session::execute calls it; a command without one is an error
};

const std::vector<CommandSpec>& command_table();
const CommandSpec* find_command(std::string_view name);
// The tables wrap their descriptions at `columns` (a terminal's width; 0: no limit).
std::string help_overview(int columns = Table::terminal_columns());
// Help for one command, or for "ops" the language's ops and operators; empty when there is no such command.
std::string help_for(std::string_view name, int columns = Table::terminal_columns());
// "; did you mean 'open'?" for a name near a command's (or one of `others`), else empty.
std::string did_you_mean(const std::string& name, const std::vector<std::string>& others = {});
// "PROBLEM\nusage: USAGE" for a command's argument error.
std::string usage_error(const std::string& command, const std::string& problem);
// A whole-string base-10 integer ("8", "-3"); false for anything else.
bool parse_int(const std::string& s, int64_t& out);

}  // namespace prism::repl
