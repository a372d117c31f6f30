// Text to IR in one call: parse every program, then build and type-check each one that parsed.
// Never throws; every problem is a diagnostic.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "engine/diagnostic.h"
#include "engine/ir/program.h"

namespace prism {

struct CompileResult {
  std::vector<Program> programs;  // the programs without errors, in source order
  Diagnostics diagnostics;        // sorted by position
};

CompileResult compile_text(std::string_view text, const std::string& file);

}  // namespace prism
