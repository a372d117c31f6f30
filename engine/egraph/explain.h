// Explanations: why two terms are equal, as the chain of rule applications that joins them in
// the proof forest, printed one step a line (term, then "→ term   [rule]"). A congruence step
// (same operator, equal children) lists the explanations of the children that differ, indented.
#pragma once
#include <string>
#include <vector>

#include "engine/egraph/rewrite.h"
#include "engine/egraph/tensor_lang.h"

namespace prism::eg {

struct ExplainOptions {
  size_t max_depth = 12;       // nesting of congruence sub-explanations (2 per level)
  size_t max_term_len = 400;   // each printed term is cut here
  size_t max_lines = 400;
};

std::string explain(const TensorGraph& tg, const std::vector<Rewrite>& rules, Id a, Id b, const ExplainOptions& opt = {});
// Rule names along the chain (congruence steps contribute their children's rules), in order.
std::vector<std::string> explanation_rules(const TensorGraph& tg, const std::vector<Rewrite>& rules, Id a, Id b);

}  // namespace prism::eg
