// Interactive line input through libedit: prompt, history kept across sessions, tab completion.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace prism::repl {

class LineEditor {
 public:
  // `words` returns the completion candidates for the word being typed, given the words before it.
  using Completer = std::function<std::vector<std::string>(const std::vector<std::string>& before, const std::string& prefix)>;

  LineEditor(std::string history_file, Completer completer);
  ~LineEditor();
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  enum class Input { Line, Interrupted, End };
  // Reads one line into `line`. Interrupted: Ctrl-C at the prompt (the line is dropped);
  // End: end of input (Ctrl-D).
  Input read(const std::string& prompt, std::string& line);
  void remember(const std::string& entry);

 private:
  std::string history_file_;
};

// The paths that complete `prefix` ("examples/la" -> "examples/layers/"): entries of its directory
// that start with its last part, a directory's with a trailing '/' (so that completion goes on
// into it, where libedit would end the word with a space), hidden ones only when asked for by a
// leading '.'; sorted.
std::vector<std::string> path_candidates(const std::string& prefix);

}  // namespace prism::repl
