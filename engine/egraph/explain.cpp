#include "engine/egraph/explain.h"

#include <functional>

namespace prism::eg {

namespace {

std::string reason(const std::vector<Rewrite>& rules, const Justification& why) {
  switch (why.kind) {
    case Justification::Rule: return why.rule < rules.size() ? rules[why.rule].name : "rule " + std::to_string(why.rule);
    case Justification::Congruence: return "congruence";
    case Justification::Given: return "given";
    case Justification::None: break;
  }
  return "?";
}

}  // namespace

std::string explain(const TensorGraph& tg, const std::vector<Rewrite>& rules, Id a, Id b, const ExplainOptions& opt) {
  const EGraph& g = tg.graph();
  std::string out;
  size_t lines = 0;
  std::function<void(Id, Id, size_t)> go = [&](Id x, Id y, size_t depth) {
    std::string pad(2 * depth, ' ');
    for (const auto& step : g.proof_path(x, y)) {
      if (++lines > opt.max_lines) return;
      out += pad + "→ " + tg.print(step.to, opt.max_term_len) + "   [" + reason(rules, step.why) + "]\n";
      if (step.why.kind == Justification::Congruence && depth < opt.max_depth) {
        const ENode &p = g.id_node(step.from), &q = g.id_node(step.to);
        for (int i = 0; i < p.arity; ++i)
          if (p.child[i] != q.child[i]) {
            out += pad + "  where " + tg.print(p.child[i], opt.max_term_len) + "\n";
            go(p.child[i], q.child[i], depth + 2);
          }
      }
    }
  };
  out += tg.print(a, opt.max_term_len) + "\n";
  go(a, b, 0);
  return out;
}

std::vector<std::string> explanation_rules(const TensorGraph& tg, const std::vector<Rewrite>& rules, Id a, Id b) {
  const EGraph& g = tg.graph();
  std::vector<std::string> names;
  std::function<void(Id, Id, size_t)> go = [&](Id x, Id y, size_t depth) {
    for (const auto& step : g.proof_path(x, y)) {
      if (step.why.kind == Justification::Congruence) {
        if (depth > 64) continue;
        const ENode &p = g.id_node(step.from), &q = g.id_node(step.to);
        for (int i = 0; i < p.arity; ++i)
          if (p.child[i] != q.child[i]) go(p.child[i], q.child[i], depth + 1);
      } else {
        names.push_back(reason(rules, step.why));
      }
    }
  };
  go(a, b, 0);
  return names;
}

}  // namespace prism::eg
