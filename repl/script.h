// Splitting REPL input into commands. A `program … { … }` block is one command however many lines
// or `;` it contains; elsewhere `;` and newlines separate commands.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace prism::repl {

struct ScriptCommand {
  std::string text;
  int line = 1;    // 1-based line where the command starts in its input (for error messages)
  int column = 1;  // 1-based column (byte) of its first character on that line
};

// Incremental splitter: feed lines as they arrive (interactive input, a pipe), take complete
// commands as they close. `pending()` says whether an unfinished program block waits for more.
class CommandSplitter {
 public:
  void feed_line(std::string_view line);
  // Feeds a whole text (a -c argument, a file).
  void feed_text(std::string_view text);
  std::vector<ScriptCommand> take();
  bool pending() const { return depth_ > 0 || in_block_; }
  // At end of input: an unfinished block is returned as a command too (the daemon reports it).
  std::vector<ScriptCommand> finish();

 private:
  void end_command();
  std::string current_;
  int current_line_ = 0;
  int current_column_ = 1;
  int line_ = 0;
  int depth_ = 0;         // brace depth inside a program block
  bool in_block_ = false;  // saw `program` and are waiting for its braces to close
  std::vector<ScriptCommand> ready_;
};

// Words of one command: whitespace-separated, with "double quotes" grouping (for paths).
std::vector<std::string> split_words(std::string_view command);
// Where a `"` that is never closed stands in `command` (0-based), or npos when every quote closes.
size_t unclosed_quote(std::string_view command);

// True when the command starts a program block (`program NAME(...) {`).
bool is_program_block(std::string_view command);
// The NAME of `program NAME(`, or "" when it has none.
std::string program_block_name(std::string_view command);

}  // namespace prism::repl
