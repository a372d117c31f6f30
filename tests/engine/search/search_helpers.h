// Helpers for the search tests: the example programs, lowered.
#pragma once
#include <fstream>
#include <map>
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

// Every example at one small binding: what the code generators' tests instantiate them at.
inline const std::map<std::string, DimBindings>& small_example_dims() {
  static const std::map<std::string, DimBindings> dims = {
      {"rms_linear", {{"n", 4}, {"d", 64}}},
      {"rmsnorm_mlp", {{"n", 4}, {"d", 64}}},
      {"gated_mlp", {{"n", 4}, {"d", 64}}},
      {"lora", {{"n", 4}, {"d", 64}, {"o", 128}, {"r", 8}}},
      {"attention", {{"B", 2}, {"q", 2}, {"s", 64}, {"e", 16}}},
      {"qk_norm_attention", {{"B", 2}, {"q", 2}, {"s", 64}, {"e", 16}}},
      {"gqa", {{"h", 2}, {"g", 2}, {"s", 64}, {"e", 16}}},
  };
  return dims;
}

}  // namespace prism::test
