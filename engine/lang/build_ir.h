// Turns a parsed program into IR: resolves names and dims, binds call arguments to each op's
// signature, and infers every value's type (infer_shapes.h). Errors become diagnostics at the
// offending call; a statement that fails poisons the names it defines, so their later uses stay
// silent instead of cascading.
//
// Names in expressions resolve to values first, then to the program's dims: a dim used as a value
// is a symbolic scalar constant (`x / d`). Values may not share a name with a dim.
#pragma once
#include <optional>
#include <string>

#include "engine/diagnostic.h"
#include "engine/ir/program.h"
#include "engine/lang/ast.h"

namespace prism {

struct BuildResult {
  std::optional<Program> program;  // set when there were no diagnostics
  Diagnostics diagnostics;
};

BuildResult build_program(const ProgramAst& ast, const std::string& file);

}  // namespace prism
