#include "engine/lang/compile.h"

#include <algorithm>
#include <exception>

#include "engine/lang/build_ir.h"
#include "engine/lang/parser.h"

namespace prism {

CompileResult compile_text(std::string_view text, const std::string& file) {
  CompileResult out;
  try {
    ParseResult parsed = parse(text, file);
    out.diagnostics = std::move(parsed.diagnostics);
    for (const auto& ast : parsed.programs) {
      BuildResult built = build_program(ast, file);
      out.diagnostics.insert(out.diagnostics.end(), built.diagnostics.begin(), built.diagnostics.end());
      if (built.program) out.programs.push_back(std::move(*built.program));
    }
  } catch (const std::exception& e) {
    // Last line of defence (allocation failure and the like): report, never propagate.
    out.programs.clear();
    out.diagnostics.push_back({file, {}, Severity::Error, std::string("internal error: ") + e.what()});
  }
  std::stable_sort(out.diagnostics.begin(), out.diagnostics.end(), [](const Diagnostic& a, const Diagnostic& b) {
    const SourcePos &x = a.range.begin, &y = b.range.begin;
    return x.line != y.line ? x.line < y.line : x.col < y.col;
  });
  return out;
}

}  // namespace prism
