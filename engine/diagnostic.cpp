#include "engine/diagnostic.h"

namespace prism {

std::string Diagnostic::format() const {
  const char* level = severity == Severity::Error ? "error" : severity == Severity::Warning ? "warning" : "note";
  return (file.empty() ? std::string("<input>") : file) + ":" + std::to_string(range.begin.line) + ":" +
         std::to_string(range.begin.col) + ": " + level + ": " + message;
}

}  // namespace prism
