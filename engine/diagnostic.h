// A problem found in program text, located by 1-based line and column (columns count bytes).
#pragma once
#include <string>
#include <vector>

namespace prism {

struct SourcePos {
  int line = 1;  // 1-based
  int col = 1;   // 1-based, in bytes of the UTF-8 text
  bool operator==(const SourcePos&) const = default;
};

struct SourceRange {
  SourcePos begin;
  SourcePos end;  // exclusive; equal to begin for a point
  bool operator==(const SourceRange&) const = default;
};

enum class Severity { Error, Warning, Info };

struct Diagnostic {
  std::string file;  // the document's name as the user gave it (path or uri)
  SourceRange range;
  Severity severity = Severity::Error;
  std::string message;  // e.g. "matmul: inner dims d and n differ"

  // "file:line:col: error: message", the form users and editors know from compilers.
  std::string format() const;
};

using Diagnostics = std::vector<Diagnostic>;

}  // namespace prism
