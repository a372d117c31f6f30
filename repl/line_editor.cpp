#include "repl/line_editor.h"

#include <editline/readline.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "repl/interrupt.h"
#include "repl/script.h"

namespace prism::repl {

namespace {

constexpr int kHistoryEntries = 2000;

// libedit's completion hooks are plain C functions; the completer lives here while a
// LineEditor exists.
LineEditor::Completer* active_completer = nullptr;
std::vector<std::string> candidates;

char* next_candidate(const char* /*text*/, int state) {
  static size_t index;
  if (state == 0) index = 0;
  if (index < candidates.size()) return ::strdup(candidates[index++].c_str());
  return nullptr;
}

char** complete(const char* text, int start, int /*end*/) {
  if (!active_completer) return nullptr;
  std::string before_text(rl_line_buffer, static_cast<size_t>(start));
  candidates = (*active_completer)(split_words(before_text), text);
  if (candidates.empty()) {
    // Nothing of ours fits; let libedit complete file names where a path is expected.
    return nullptr;
  }
  rl_attempted_completion_over = 1;
  // A directory is not the end of a path: no space after it.
  rl_completion_append_character = candidates.size() == 1 && candidates[0].back() == '/' ? '\0' : ' ';
  return rl_completion_matches(text, next_candidate);
}

}  // namespace

std::vector<std::string> path_candidates(const std::string& prefix) {
  namespace fs = std::filesystem;
  const size_t slash = prefix.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : prefix.substr(0, slash + 1), part = prefix.substr(dir.size());
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(part, 0) != 0 || (name[0] == '.' && (part.empty() || part[0] != '.'))) continue;
    std::error_code kind;
    out.push_back(dir + name + (it->is_directory(kind) ? "/" : ""));
  }
  std::sort(out.begin(), out.end());
  return out;
}

LineEditor::LineEditor(std::string history_file, Completer completer) : history_file_(std::move(history_file)) {
  active_completer = new Completer(std::move(completer));
  rl_readline_name = const_cast<char*>("prism");
  rl_attempted_completion_function = complete;
  using_history();
  stifle_history(kHistoryEntries);
  if (!history_file_.empty()) read_history(history_file_.c_str());
}

LineEditor::~LineEditor() {
  if (!history_file_.empty()) {
    write_history(history_file_.c_str());
    history_truncate_file(history_file_.c_str(), kHistoryEntries);
  }
  delete active_completer;
  active_completer = nullptr;
}

LineEditor::Input LineEditor::read(const std::string& prompt, std::string& line) {
  int interrupts = interrupts_seen();
  char* text = readline(prompt.c_str());
  if (!text) return interrupts_seen() != interrupts ? Input::Interrupted : Input::End;
  line = text;
  std::free(text);
  return Input::Line;
}

void LineEditor::remember(const std::string& entry) {
  if (entry.find_first_not_of(" \t") == std::string::npos) return;
  add_history(entry.c_str());
}

}  // namespace prism::repl
