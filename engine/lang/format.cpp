#include "engine/lang/format.h"

#include <map>
#include <vector>

#include "engine/lang/lexer.h"
#include "engine/lang/parser.h"

namespace prism {

namespace {

bool is_operator(Tok k) {
  return k == Tok::Plus || k == Tok::Minus || k == Tok::Star || k == Tok::Slash || k == Tok::At || k == Tok::StarStar || k == Tok::Greater ||
         k == Tok::GreaterEq || k == Tok::Less || k == Tok::LessEq || k == Tok::EqEq || k == Tok::NotEq;
}

// A minus that negates: nothing before it that could be its left operand.
bool is_unary(const Token* prev) {
  if (!prev) return true;
  const Tok k = prev->kind;
  return k == Tok::LParen || k == Tok::LBracket || k == Tok::Comma || k == Tok::Assign || k == Tok::Colon ||
         k == Tok::KwReturn || is_operator(k);
}

// One statement (or a program's header, or its closing brace) on one line.
std::string render(const std::vector<Token>& tokens) {
  std::string out;
  int nesting = 0;  // ( and [ within the statement: an `=` inside is a keyword argument's
  bool prev_unary = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    const Token* prev = i ? &tokens[i - 1] : nullptr;
    bool space = prev != nullptr;
    if (!prev || prev_unary) space = false;
    else if (t.kind == Tok::RParen || t.kind == Tok::RBracket || t.kind == Tok::Comma || t.kind == Tok::Colon)
      space = false;
    else if (prev->kind == Tok::LParen || prev->kind == Tok::LBracket) space = false;
    else if (t.kind == Tok::Dot || prev->kind == Tok::Dot) space = false;  // X.T
    else if (t.kind == Tok::Assign || prev->kind == Tok::Assign) space = nesting == 0;
    else if ((t.kind == Tok::LParen || t.kind == Tok::LBracket) && prev->kind == Tok::Ident) space = false;  // a call, a shape
    prev_unary = t.kind == Tok::Minus && is_unary(prev);
    if (space) out += ' ';
    out += t.text;
    if (t.kind == Tok::LParen || t.kind == Tok::LBracket) ++nesting;
    if ((t.kind == Tok::RParen || t.kind == Tok::RBracket) && nesting > 0) --nesting;
  }
  return out;
}

struct Statement {
  std::vector<Token> tokens;
  int depth = 0;             // braces around it
  int first = 0, last = 0;   // its source lines (1-based)
  bool opens = false;        // ends with '{'
  bool closes = false;       // is '}'
};

std::vector<Statement> statements(const std::vector<Token>& tokens) {
  std::vector<Statement> out;
  Statement cur;
  int depth = 0, nesting = 0;
  auto flush = [&] {
    if (cur.tokens.empty()) return;
    cur.first = cur.tokens.front().range.begin.line;
    cur.last = cur.tokens.back().range.begin.line;
    out.push_back(std::move(cur));
    cur = Statement{};
    cur.depth = depth;
  };
  for (const Token& t : tokens) {
    switch (t.kind) {
      case Tok::End:
      case Tok::Newline: flush(); break;
      case Tok::Semicolon:
        if (nesting == 0) flush();
        else cur.tokens.push_back(t);
        break;
      case Tok::LBrace:
        cur.tokens.push_back(t);
        cur.opens = true;
        ++depth;
        nesting = 0;
        flush();
        break;
      case Tok::RBrace:
        flush();
        depth = std::max(0, depth - 1);
        nesting = 0;
        cur.depth = depth;
        cur.tokens.push_back(t);
        cur.closes = true;
        flush();
        break;
      default:
        if (t.kind == Tok::LParen || t.kind == Tok::LBracket) ++nesting;
        if ((t.kind == Tok::RParen || t.kind == Tok::RBracket) && nesting > 0) --nesting;
        cur.tokens.push_back(t);
    }
  }
  return out;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines{""};  // 1-based: lines[0] unused
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(start, end - start));
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

std::string trim_left(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b);
}

// The tokens that carry meaning: what the layout may not change.
std::vector<std::pair<Tok, std::string>> significant(std::string_view text) {
  std::vector<std::pair<Tok, std::string>> out;
  for (const Token& t : lex(text))
    if (t.kind != Tok::Newline && t.kind != Tok::Semicolon) out.push_back({t.kind, t.text});
  return out;
}

std::optional<std::string> layout(std::string_view text) {
  const std::vector<std::string> lines = split_lines(text);
  const std::vector<Token> tokens = lex(text);
  std::vector<bool> has_code(lines.size() + 1, false);
  for (const Token& t : tokens)
    if (t.kind != Tok::Newline && t.kind != Tok::End)
      for (int l = t.range.begin.line; l <= t.range.end.line && size_t(l) < has_code.size(); ++l) has_code[size_t(l)] = true;
  // The comment of each line ('#' starts one anywhere: the language has no strings).
  std::map<int, std::string> comments;
  for (size_t l = 1; l < lines.size(); ++l)
    if (size_t hash = lines[l].find('#'); hash != std::string::npos) comments[int(l)] = lines[l].substr(hash);

  const std::vector<Statement> stmts = statements(tokens);
  std::vector<std::string> out;
  bool blank_pending = false;
  int depth_now = 0;
  bool after_open = false;  // the last line emitted opened a block
  auto emit = [&](std::string line) {
    if (!out.empty() && out.back() == "}") blank_pending = true;  // programs are apart by one blank line
    // At most one blank line, and none right after a '{'.
    if (blank_pending && !out.empty() && !after_open) out.push_back("");
    blank_pending = false;
    after_open = false;
    out.push_back(std::move(line));
  };
  auto indent = [](int depth) { return std::string(size_t(2 * depth), ' '); };
  int next_line = 1;  // the first source line not yet emitted
  for (size_t i = 0; i < stmts.size(); ++i) {
    const Statement& s = stmts[i];
    // Full-line comments and blank lines before it.
    for (; next_line < s.first; ++next_line) {
      if (has_code[size_t(next_line)]) continue;  // a line of an earlier statement
      if (auto c = comments.find(next_line); c != comments.end()) emit(indent(depth_now) + c->second);
      else if (lines[size_t(next_line)].empty()) blank_pending = true;
    }
    if (s.closes) blank_pending = false;  // no blank line before a '}'
    // Comments inside a statement that spans lines: keep its lines as written.
    bool inner_comment = false;
    for (int l = s.first; l < s.last; ++l) inner_comment = inner_comment || comments.count(l);
    if (inner_comment) {
      // Only when no other statement shares those lines; else leave the whole text alone.
      if ((i > 0 && stmts[i - 1].last >= s.first) || (i + 1 < stmts.size() && stmts[i + 1].first <= s.last)) return std::nullopt;
      emit(indent(s.depth) + trim_left(lines[size_t(s.first)]));
      for (int l = s.first + 1; l <= s.last; ++l) out.push_back(lines[size_t(l)]);
    } else {
      std::string line = indent(s.depth) + render(s.tokens);
      // The comment that ends its last line, if no later statement is on that line.
      const bool last_on_line = i + 1 == stmts.size() || stmts[i + 1].first > s.last;
      // It stays at its column when the code leaves room (comments aligned in a block stay so).
      if (auto c = comments.find(s.last); c != comments.end() && last_on_line) {
        const size_t column = lines[size_t(s.last)].find('#');
        line.append(column >= line.size() + 2 ? column - line.size() : 2, ' ').append(c->second);
      }
      emit(std::move(line));
    }
    next_line = std::max(next_line, s.last + 1);
    depth_now = s.opens ? s.depth + 1 : s.depth;
    after_open = s.opens;
  }
  for (; next_line < int(lines.size()); ++next_line)
    if (!has_code[size_t(next_line)])
      if (auto c = comments.find(next_line); c != comments.end()) emit(indent(depth_now) + c->second);
  std::string result;
  for (const std::string& line : out) result.append(line).append("\n");
  return result;
}

}  // namespace

std::optional<std::string> format_source(std::string_view text) {
  if (!parse(text, "").diagnostics.empty()) return std::nullopt;
  std::optional<std::string> formatted = layout(text);
  if (!formatted || significant(text) != significant(*formatted) || !parse(*formatted, "").diagnostics.empty()) return std::nullopt;
  return formatted;
}

}  // namespace prism
