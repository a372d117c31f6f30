// The canonical layout of .prism text (textDocument/formatting): one statement a line, two
// spaces per brace level, one space around `=` and binary operators and after `,` and `:`, none
// inside brackets or around a keyword argument's `=` (`sum(x, axis=-1)`), at most one blank line,
// and one between programs. Comments are kept where they are: full-line ones re-indented,
// trailing ones at their column if the code leaves two spaces before it (an aligned block stays
// aligned), else after two spaces. A statement that spans lines is joined unless a comment sits
// inside it (then its lines are kept as written).
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace prism {

// The text laid out canonically, or nullopt when it does not parse (nothing is guessed) or the
// layout would change its tokens (a guard: formatting never changes what a program means).
std::optional<std::string> format_source(std::string_view text);

}  // namespace prism
