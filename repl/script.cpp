#include "repl/script.h"

#include <cctype>

namespace prism::repl {

namespace {
std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}
bool starts_with_word(std::string_view s, std::string_view word) {
  s = trim(s);
  return s.size() > word.size() && s.substr(0, word.size()) == word &&
         !(std::isalnum(static_cast<unsigned char>(s[word.size()])) || s[word.size()] == '_');
}
}  // namespace

bool is_program_block(std::string_view command) { return starts_with_word(command, "program"); }

std::string program_block_name(std::string_view command) {
  command = trim(command);
  if (!is_program_block(command)) return {};
  size_t i = 7;
  while (i < command.size() && std::isspace(static_cast<unsigned char>(command[i]))) ++i;
  size_t start = i;
  while (i < command.size() && (std::isalnum(static_cast<unsigned char>(command[i])) || command[i] == '_')) ++i;
  return std::string(command.substr(start, i - start));
}

void CommandSplitter::end_command() {
  std::string_view t = trim(current_);
  if (!t.empty()) ready_.push_back({std::string(t), current_line_, current_column_});
  current_.clear();
  in_block_ = false;
  depth_ = 0;
}

void CommandSplitter::feed_line(std::string_view line) {
  ++line_;
  bool in_comment = false;
  bool in_quote = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (current_.empty() || trim(current_).empty()) {
      current_line_ = line_;
      if (!std::isspace(static_cast<unsigned char>(c))) current_column_ = int(i) + 1;
    }
    if (in_comment) {
      current_ += c;
      continue;
    }
    if (c == '"' && !in_block_) in_quote = !in_quote;
    if (!in_block_ && !in_quote && c == ';') {
      end_command();
      continue;
    }
    if (c == '#' && !in_quote) {
      // A comment runs to the end of the line; outside a block it is dropped entirely.
      if (!in_block_) break;
      in_comment = true;
      current_ += c;
      continue;
    }
    current_ += c;
    if (!in_block_ && is_program_block(current_)) in_block_ = true;
    if (in_block_) {
      if (c == '{') ++depth_;
      if (c == '}' && --depth_ <= 0) end_command();
    }
  }
  if (in_block_) {
    current_ += '\n';
  } else {
    end_command();
  }
}

void CommandSplitter::feed_text(std::string_view text) {
  size_t at = 0;
  while (at <= text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) {
      if (at < text.size()) feed_line(text.substr(at));
      break;
    }
    feed_line(text.substr(at, nl - at));
    at = nl + 1;
  }
}

std::vector<ScriptCommand> CommandSplitter::take() {
  std::vector<ScriptCommand> out;
  out.swap(ready_);
  return out;
}

std::vector<ScriptCommand> CommandSplitter::finish() {
  end_command();
  return take();
}

std::vector<std::string> split_words(std::string_view command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false, quoted = false;
  for (char c : command) {
    if (c == '"') {
      quoted = !quoted;
      in_word = true;
      continue;
    }
    if (!quoted && std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    word += c;
    in_word = true;
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

size_t unclosed_quote(std::string_view command) {
  size_t open = std::string_view::npos;
  for (size_t i = 0; i < command.size(); ++i)
    if (command[i] == '"') open = open == std::string_view::npos ? i : std::string_view::npos;
  return open;
}

}  // namespace prism::repl
