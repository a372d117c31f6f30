// Recursive-descent parser for .prism text. Precedence as in Python: '+' '-' bind loosest (left
// associative), then '*' '/' '@' (left associative), then unary '-', then calls, names, numbers,
// lists and parentheses. A syntax error ends the program it is in (one diagnostic per program);
// parsing resumes at the next 'program' keyword. Never throws.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "engine/diagnostic.h"
#include "engine/lang/ast.h"

namespace prism {

// Expression nesting deeper than this is rejected with a diagnostic (keeps recursion bounded).
constexpr int kMaxExprDepth = 200;

struct ParseResult {
  std::vector<ProgramAst> programs;  // the programs that parsed
  Diagnostics diagnostics;
};

ParseResult parse(std::string_view text, const std::string& file);

}  // namespace prism
