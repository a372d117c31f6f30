// Splits program text into tokens. Newlines are tokens (they end statements) except inside ( ) and
// [ ], where they are ignored as in Python. A character that starts no token becomes an Error token
// whose text is the message, so the parser reports it at its position like any other mistake.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/diagnostic.h"

namespace prism {

enum class Tok {
  Ident, Integer, Float,
  KwProgram, KwReturn, KwTrue, KwFalse,
  LParen, RParen, LBracket, RBracket, LBrace, RBrace,
  Comma, Colon, Semicolon, Assign, Plus, Minus, Star, Slash, At,
  StarStar, Dot,       // X ** 3, X.T
  Greater, GreaterEq,  // comparisons, and an input's domain: `X: f32[n] >= 0`
  Less, LessEq, EqEq, NotEq,
  Newline, End, Error,
};

struct Token {
  Tok kind = Tok::End;
  std::string text;   // the source spelling; for Error, the message
  SourceRange range;
  int64_t integer = 0;  // Tok::Integer
  double number = 0;    // Tok::Integer and Tok::Float
};

std::vector<Token> lex(std::string_view text);

// How a token is quoted in messages: "'W'", "end of line", "end of file".
std::string describe(const Token& t);
std::string tok_spelling(Tok kind);  // "')'", "a name", …

}  // namespace prism
