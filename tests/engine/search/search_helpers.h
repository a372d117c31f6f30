// Helpers for the search tests: the example programs, lowered.
#pragma once
#include <fstream>
#include <sstream>
#include <string>

#include "engine/ir/lower_composites.h"
#include "engine/lang/compile.h"
#include "engine/search/search.h"

namespace prism::test {

inline std::string example_text(const std::string& name) {
  std::ifstream in(std::string(PRISM_SOURCE_DIR) + "/examples/" + name + ".prism");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline Program lowered_example(const std::string& name) {
  CompileResult r = compile_text(example_text(name), name + ".prism");
  for (const auto& p : r.programs)
    if (p.name == name) return lower_composites(p);
  throw std::runtime_error("no program " + name);
}

inline Program lowered_text(const std::string& text, const std::string& name) {
  CompileResult r = compile_text(text, name + ".prism");
  for (const auto& p : r.programs)
    if (p.name == name) return lower_composites(p);
  throw std::runtime_error("no program " + name);
}

}  // namespace prism::test
