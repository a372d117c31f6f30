#include "engine/lang/lexer.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace prism {

namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

std::string show_char(unsigned char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + char(c) + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
  return buf;
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    int depth = 0;  // ( and [ nesting: newlines inside are not statement ends
    while (true) {
      skip_blank();
      Token t = next();
      if (t.kind == Tok::LParen || t.kind == Tok::LBracket) ++depth;
      if ((t.kind == Tok::RParen || t.kind == Tok::RBracket) && depth > 0) --depth;
      // A brace resets the nesting so an unclosed '(' cannot swallow the rest of the file's lines.
      if (t.kind == Tok::LBrace || t.kind == Tok::RBrace || t.kind == Tok::KwProgram) depth = 0;
      if (t.kind == Tok::Newline && (depth > 0 || (!out.empty() && out.back().kind == Tok::Newline))) continue;
      out.push_back(std::move(t));
      if (out.back().kind == Tok::End) return out;
    }
  }

 private:
  SourcePos pos() const { return {line_, int(i_ - line_start_) + 1}; }

  void skip_blank() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else {
        return;
      }
    }
  }

  Token make(Tok kind, SourcePos begin, size_t start) {
    Token t;
    t.kind = kind;
    t.text = std::string(s_.substr(start, i_ - start));
    t.range = {begin, pos()};
    return t;
  }

  Token next() {
    SourcePos begin = pos();
    size_t start = i_;
    if (i_ >= s_.size()) return make(Tok::End, begin, start);
    char c = s_[i_];
    if (c == '\n') {
      ++i_;
      Token t = make(Tok::Newline, begin, start);
      t.range.end = begin;
      ++line_;
      line_start_ = i_;
      return t;
    }
    if (is_ident_start(c)) {
      while (i_ < s_.size() && is_ident_char(s_[i_])) ++i_;
      Token t = make(Tok::Ident, begin, start);
      if (t.text == "program") t.kind = Tok::KwProgram;
      else if (t.text == "return") t.kind = Tok::KwReturn;
      else if (t.text == "true") t.kind = Tok::KwTrue;
      else if (t.text == "false") t.kind = Tok::KwFalse;
      return t;
    }
    if (is_digit(c) || (c == '.' && i_ + 1 < s_.size() && is_digit(s_[i_ + 1]))) return number(begin, start);
    ++i_;
    switch (c) {
      case '(': return make(Tok::LParen, begin, start);
      case ')': return make(Tok::RParen, begin, start);
      case '[': return make(Tok::LBracket, begin, start);
      case ']': return make(Tok::RBracket, begin, start);
      case '{': return make(Tok::LBrace, begin, start);
      case '}': return make(Tok::RBrace, begin, start);
      case ',': return make(Tok::Comma, begin, start);
      case ':': return make(Tok::Colon, begin, start);
      case ';': return make(Tok::Semicolon, begin, start);
      case '=': return make(accept('=') ? Tok::EqEq : Tok::Assign, begin, start);
      case '+': return make(Tok::Plus, begin, start);
      case '-': return make(Tok::Minus, begin, start);
      case '*': return make(accept('*') ? Tok::StarStar : Tok::Star, begin, start);
      case '/': return make(Tok::Slash, begin, start);
      case '@': return make(Tok::At, begin, start);
      case '.': return make(Tok::Dot, begin, start);
      case '>': return make(accept('=') ? Tok::GreaterEq : Tok::Greater, begin, start);
      case '<': return make(accept('=') ? Tok::LessEq : Tok::Less, begin, start);
      case '!':
        if (accept('=')) return make(Tok::NotEq, begin, start);
        break;
      default: break;
    }
    Token t = make(Tok::Error, begin, start);
    t.text = "unexpected character " + show_char(static_cast<unsigned char>(c));
    return t;
  }

  // Consumes `c` when it comes next (the second character of '**', '>=', '==' …).
  bool accept(char c) {
    if (i_ >= s_.size() || s_[i_] != c) return false;
    ++i_;
    return true;
  }

  Token number(SourcePos begin, size_t start) {
    bool is_float = false;
    while (i_ < s_.size() && is_digit(s_[i_])) ++i_;
    if (i_ < s_.size() && s_[i_] == '.') {
      is_float = true;
      ++i_;
      while (i_ < s_.size() && is_digit(s_[i_])) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      size_t j = i_ + 1;
      if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
      if (j < s_.size() && is_digit(s_[j])) {
        is_float = true;
        i_ = j;
        while (i_ < s_.size() && is_digit(s_[i_])) ++i_;
      }
    }
    Token t = make(is_float ? Tok::Float : Tok::Integer, begin, start);
    if (i_ < s_.size() && is_ident_char(s_[i_])) {
      t.kind = Tok::Error;
      t.text = "malformed number '" + t.text + s_[i_] + "'";
      return t;
    }
    if (!is_float) {
      auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), t.integer);
      if (ec != std::errc() || p != t.text.data() + t.text.size()) {
        t.kind = Tok::Error;
        t.text = "integer " + t.text + " is too large";
        return t;
      }
      t.number = double(t.integer);
      return t;
    }
    errno = 0;
    t.number = std::strtod(t.text.c_str(), nullptr);
    if (!std::isfinite(t.number)) {
      Token e = t;
      e.kind = Tok::Error;
      e.text = "number " + t.text + " is out of range";
      return e;
    }
    return t;
  }

  std::string_view s_;
  size_t i_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
};

}  // namespace

std::vector<Token> lex(std::string_view text) { return Lexer(text).run(); }

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::Newline: return "end of line";
    case Tok::End: return "end of file";
    case Tok::Error: return t.text;
    default: return "'" + (t.text.size() > 40 ? t.text.substr(0, 40) + "..." : t.text) + "'";
  }
}

std::string tok_spelling(Tok kind) {
  switch (kind) {
    case Tok::Ident: return "a name";
    case Tok::Integer: return "an integer";
    case Tok::Float: return "a number";
    case Tok::KwProgram: return "'program'";
    case Tok::KwReturn: return "'return'";
    case Tok::KwTrue: return "'true'";
    case Tok::KwFalse: return "'false'";
    case Tok::LParen: return "'('";
    case Tok::RParen: return "')'";
    case Tok::LBracket: return "'['";
    case Tok::RBracket: return "']'";
    case Tok::LBrace: return "'{'";
    case Tok::RBrace: return "'}'";
    case Tok::Comma: return "','";
    case Tok::Colon: return "':'";
    case Tok::Semicolon: return "';'";
    case Tok::Assign: return "'='";
    case Tok::Plus: return "'+'";
    case Tok::Minus: return "'-'";
    case Tok::Star: return "'*'";
    case Tok::Slash: return "'/'";
    case Tok::At: return "'@'";
    case Tok::Greater: return "'>'";
    case Tok::GreaterEq: return "'>='";
    case Tok::StarStar: return "'**'";
    case Tok::Dot: return "'.'";
    case Tok::Less: return "'<'";
    case Tok::LessEq: return "'<='";
    case Tok::EqEq: return "'=='";
    case Tok::NotEq: return "'!='";
    case Tok::Newline: return "end of line";
    case Tok::End: return "end of file";
    case Tok::Error: return "an error";
  }
  return "?";
}

}  // namespace prism
