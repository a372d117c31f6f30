#include "engine/sgraph/instantiate.h"

#include <algorithm>
#include <functional>

#include "engine/error.h"

namespace prism::sgraph {

namespace {

std::string bindings_str(const Dim& d, const DimBindings& all) {
  std::string s = d.str();
  auto syms = d.symbols();
  if (syms.size() == 1 && d.as_symbol()) {
    auto it = all.find(syms[0]);
    if (it != all.end()) return s + "=" + std::to_string(it->second);
  }
  try {
    return s + "=" + d.evaluate(all).str();
  } catch (const DimError&) {
    return s;
  }
}

[[noreturn]] void invalid(const std::string& m) { throw Error(Error::Kind::InvalidArgument, m); }

std::vector<int64_t> window(const CandidateOptions& o) {
  std::vector<int64_t> out;
  if (o.powers_of_two)
    for (int64_t v = 1; v <= o.max_value; v *= 2) out.push_back(v);
  else
    for (int64_t v = 1; v <= o.max_value; ++v) out.push_back(v);
  return out;
}

// Calls fn(bindings) for each combination of the candidate lists (dims plus one value per name);
// stops when fn returns false.
template <typename Fn>
void for_each_combination(const std::map<std::string, std::vector<int64_t>>& cands, const std::vector<std::string>& names,
                          DimBindings base, Fn fn) {
  std::vector<size_t> idx(names.size(), 0);
  for (const std::string& n : names)
    if (cands.at(n).empty()) return;
  while (true) {
    for (size_t i = 0; i < names.size(); ++i) base[names[i]] = cands.at(names[i])[idx[i]];
    if (!fn(base)) return;
    size_t i = 0;
    while (i < names.size() && ++idx[i] == cands.at(names[i]).size()) idx[i++] = 0;
    if (i == names.size()) return;
  }
}

}  // namespace

namespace {

// One condition check_bindings checks: a constraint of the analysis, a tile dim that must be a
// positive integer, or a kernel's footprint within the budget.
struct Condition {
  enum class Kind { Constraint, TileDim, Footprint } kind;
  const Constraint* constraint = nullptr;
  const Dim* dim = nullptr;  // TileDim: the dim; Footprint: the bytes
  size_t kernel = 0, op = 0;
};

std::vector<Condition> conditions(const Analysis& a) {
  std::vector<Condition> out;
  for (const Constraint& c : a.constraints) out.push_back({Condition::Kind::Constraint, &c});
  for (size_t k = 0; k < a.tiles.size(); ++k)
    for (size_t i = 0; i < a.tiles[k].size(); ++i)
      if (a.tiles[k][i].type)
        for (const Dim& d : a.tiles[k][i].type->shape) out.push_back({Condition::Kind::TileDim, nullptr, &d, k, i});
  for (size_t k = 0; k < a.footprint.size(); ++k)
    if (a.footprint[k]) out.push_back({Condition::Kind::Footprint, nullptr, &*a.footprint[k], k});
  return out;
}

// Why `c` fails at `all`, or none. With explain false a failure says nothing ("").
std::optional<std::string> failure(const Condition& c, const DimBindings& all, const TileBudget& budget, bool explain) {
  try {
    switch (c.kind) {
      case Condition::Kind::Constraint: {
        const Constraint& k = *c.constraint;
        Rational x = k.a.evaluate(all), y = k.b.evaluate(all);
        if (k.kind == Constraint::Kind::Equal) {
          if (x == y) return std::nullopt;
          return explain ? bindings_str(k.a, all) + " and " + bindings_str(k.b, all) + " differ (" + k.where + ")" : "";
        }
        if (!y.is_zero() && (x / y).is_integer() && (x / y).num() >= 1) return std::nullopt;
        return explain ? bindings_str(k.b, all) + " does not divide " + bindings_str(k.a, all) + " (" + k.where + ")" : "";
      }
      case Condition::Kind::TileDim: {
        Rational v = c.dim->evaluate(all);
        if (v.is_integer() && v.num() >= 1) return std::nullopt;
        return explain ? "kernel " + std::to_string(c.kernel) + ": op " + std::to_string(c.op) + " has dim " + c.dim->str() + " = " +
                             v.str() + ", not a positive integer"
                       : "";
      }
      case Condition::Kind::Footprint: {
        Rational bytes = c.dim->evaluate(all);
        if (bytes.to_double() <= double(budget.fast_memory_bytes)) return std::nullopt;
        return explain ? "kernel " + std::to_string(c.kernel) + " needs " + bytes.str() + " bytes of fast memory per block but a block has " +
                             std::to_string(budget.fast_memory_bytes)
                       : "";
      }
    }
  } catch (const DimError& e) {
    return explain ? e.what() : "";
  }
  return std::nullopt;
}

// The symbols a condition reads (a constraint's two sides together).
std::vector<std::string> condition_symbols(const Condition& c) {
  if (c.kind != Condition::Kind::Constraint) return c.dim->symbols();
  std::vector<std::string> out = c.constraint->a.symbols();
  for (const std::string& s : c.constraint->b.symbols()) out.push_back(s);
  return out;
}

}  // namespace

std::optional<std::string> check_bindings(const Analysis& a, const DimBindings& all, const TileBudget& budget) {
  for (const Condition& c : conditions(a))
    if (auto why = failure(c, all, budget, true)) return why;
  return std::nullopt;
}

Instance instantiate(const SGraph& graph, const DimBindings& dims, const DimBindings& sizes, const TileBudget& budget) {
  auto vars = graph.variables();
  if (!vars.empty()) invalid("the family still has open map choices (?" + vars[0] + "); concretize it first");
  Instance inst{graph, dims, analyze(graph)};
  if (!inst.analysis.ok()) invalid("the family is invalid: " + inst.analysis.errors[0]);
  auto params = graph.parameters();
  for (const auto& [name, value] : sizes) {
    if (std::find(params.begin(), params.end(), name) == params.end())
      invalid("'" + name + "' is not a grid size or loop range of this family");
    if (value < 1) invalid(name + "=" + std::to_string(value) + " is not a positive size");
    inst.bindings[name] = value;
  }
  for (const std::string& p : params)
    if (!sizes.count(p)) invalid("no value for " + p);
  for (const TensorDecl& in : graph.inputs)
    for (const Dim& d : in.type.shape)
      for (const std::string& s : d.symbols())
        if (!dims.count(s)) invalid("no value for dim " + s + " of input " + in.name);
  if (auto why = check_bindings(inst.analysis, inst.bindings, budget)) invalid(*why);
  return inst;
}

std::map<std::string, std::vector<int64_t>> candidate_values(const SGraph& graph, const DimBindings& dims, const CandidateOptions& options) {
  Analysis a = analyze(graph);
  std::map<std::string, std::vector<int64_t>> out;
  for (const std::string& p : graph.parameters()) {
    std::vector<int64_t> divides;  // the tensor dims p divides, where they are known now
    for (const Constraint& c : a.constraints) {
      if (c.kind != Constraint::Kind::Divides) continue;
      auto syms = c.b.symbols();
      if (std::find(syms.begin(), syms.end(), p) == syms.end()) continue;
      try {
        Rational n = c.a.evaluate(dims);
        if (n.is_integer()) divides.push_back(n.num());
      } catch (const DimError&) {
        // depends on another size: checked when the combination is instantiated
      }
    }
    for (int64_t v : window(options))
      if (std::all_of(divides.begin(), divides.end(), [&](int64_t n) { return n % v == 0; })) out[p].push_back(v);
  }
  return out;
}

std::vector<DimBindings> enumerate(const SGraph& graph, const DimBindings& dims, const TileBudget& budget, const CandidateOptions& options,
                                   size_t limit) {
  std::vector<DimBindings> out;
  Analysis a = analyze(graph);
  if (!a.ok() || !graph.is_concrete()) return out;
  auto cands = candidate_values(graph, dims, options);
  const std::vector<std::string> params = graph.parameters();
  for (const std::string& p : params)
    if (cands.at(p).empty()) return out;
  // The combinations in the order of an odometer whose first parameter turns fastest: a depth-first
  // walk binding the last parameter first. Each condition is checked at the depth that binds the
  // last of its parameters, so a failing one cuts every combination below it.
  const size_t n = params.size();
  std::vector<std::vector<Condition>> at_depth(n + 1);  // [0]: no parameter
  for (const Condition& c : conditions(a)) {
    size_t depth = 0;
    for (const std::string& s : condition_symbols(c)) {
      auto it = std::find(params.begin(), params.end(), s);
      if (it != params.end()) depth = std::max(depth, n - size_t(it - params.begin()));
    }
    at_depth[depth].push_back(c);
  }
  DimBindings all = dims;
  auto holds = [&](size_t depth) {
    return std::none_of(at_depth[depth].begin(), at_depth[depth].end(), [&](const Condition& c) { return failure(c, all, budget, false); });
  };
  std::function<bool(size_t)> walk = [&](size_t depth) {  // false: the limit is reached
    if (depth == n) {
      DimBindings sizes;
      for (const std::string& p : params) sizes[p] = all.at(p);
      out.push_back(std::move(sizes));
      return out.size() < limit;
    }
    const std::string& p = params[n - 1 - depth];
    for (int64_t v : cands.at(p)) {
      all[p] = v;
      if (holds(depth + 1) && !walk(depth + 1)) return false;
    }
    return true;
  };
  if (holds(0)) walk(0);
  return out;
}

std::vector<std::string> memory_lower_bound(const SGraph& graph, const DimBindings& dims, const TileBudget& budget,
                                            const CandidateOptions& options) {
  std::vector<std::string> out;
  Analysis a = analyze(graph);
  auto cands = candidate_values(graph, dims, options);
  for (size_t k = 0; k < a.footprint.size(); ++k) {
    if (!a.footprint[k]) continue;
    const Dim& fp = *a.footprint[k];
    std::vector<std::string> names;
    for (const std::string& s : fp.symbols())
      if (cands.count(s)) names.push_back(s);
    std::optional<double> least;
    for_each_combination(cands, names, dims, [&](const DimBindings& all) {
      try {
        double bytes = fp.evaluate(all).to_double();
        if (!least || bytes < *least) least = bytes;
      } catch (const DimError&) {
      }
      return true;
    });
    if (least && *least > double(budget.fast_memory_bytes))
      out.push_back("kernel " + std::to_string(k) + " needs at least " + std::to_string(int64_t(*least)) +
                    " bytes of fast memory per block (footprint " + fp.str() + " at its smallest tiles) but a block has " +
                    std::to_string(budget.fast_memory_bytes));
  }
  return out;
}

}  // namespace prism::sgraph
