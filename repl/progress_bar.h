// A one-line live progress display on a terminal for `$/progress` notifications
// (begin/report/end): "search rms_linear ⠿ generated 1200, pruned 800, verified 3   2.4 s".
#pragma once
#include <chrono>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace prism::repl {

class ProgressBar {
 public:
  // `columns`: the line's width; 0: the terminal's (TIOCGWINSZ, else $COLUMNS, else 80), asked
  // at each update so that a resized window is followed. A longer line is cut (a line that wraps
  // could not be redrawn in place).
  explicit ProgressBar(std::FILE* out = stderr, int columns = 0) : out_(out), columns_(columns) {}
  // Takes the `value` of one $/progress notification.
  void update(const nlohmann::json& value);
  // Erases the line (also called when the request ends without an `end`).
  void clear();

 private:
  int width() const;
  std::FILE* out_;
  int columns_;
  std::string title_;
  std::chrono::steady_clock::time_point started_{};
  bool shown_ = false;
};

}  // namespace prism::repl
