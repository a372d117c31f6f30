// "(" + s + ")", for printing dims and constants back in the language.
#pragma once
#include <string>

namespace prism {

// Built by appending: GCC 12 misreports "(" + std::string&& under -Wrestrict (GCC PR 105329).
inline std::string parenthesized(const std::string& s) {
  std::string out = "(";
  out += s;
  out += ')';
  return out;
}

}  // namespace prism
