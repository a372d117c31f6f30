#include "engine/egraph/equivalence.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <cstdio>
#include <set>

#include "engine/egraph/explain.h"
#include "engine/error.h"
#include "engine/interp/float_edges.h"
#include "engine/interp/half.h"
#include "engine/interp/interpreter.h"
#include "engine/ir/lower_composites.h"
#include "engine/ir/print.h"
#include "engine/ir/rounding_casts.h"
#include "engine/lang/compile.h"
#include "engine/lang/lexer.h"
#include "engine/util/text.h"

namespace prism {

const char* verdict_name(EquivResult::Verdict v) {
  switch (v) {
    case EquivResult::Verdict::Proved: return "proved";
    case EquivResult::Verdict::NotProved: return "not proved";
    case EquivResult::Verdict::Refuted: return "refuted";
  }
  return "?";
}

namespace {

// The program as proofs see it (from_program.h): every value f32 but a rounding cast's, which
// rounds as the program writes it (rounding_casts.h).
Program as_f32(Program p) {
  const std::vector<bool> keep = rounding_casts(p);
  for (Value& v : p.values)
    if (!keep[size_t(v.id)]) v.type.dtype = DType::F32;
  return p;
}

// Every shape of the program is a positive integer of at most kMaxCheckElements elements, and
// every reshape keeps the element count.
constexpr int64_t kMaxCheckElements = int64_t(1) << 22;

// The element count of `shape` at `b`, or -1 past kMaxCheckElements (checked before each product:
// a dim of 2^62 must not overflow, D12).
int64_t bounded_count(const std::vector<Dim>& shape, const DimBindings& b) {
  int64_t count = 1;
  for (const Dim& d : shape) {
    int64_t size = d.evaluate_size(b);
    if (size > kMaxCheckElements / count) return -1;
    count *= size;
  }
  return count;
}

bool binding_fits(const Program& p, const DimBindings& b) {
  try {
    for (const Value& v : p.values) {
      int64_t count = bounded_count(v.type.shape, b);
      if (count < 0) return false;
      if (v.op == Op::Reshape && bounded_count(p.value(v.operands[0]).type.shape, b) != count) return false;
    }
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::map<std::string, Tensor> inputs_for(const Program& p, const DimBindings& b, uint64_t seed) {
  std::map<std::string, Tensor> in;
  for (int id : p.inputs) {
    const Value& v = p.value(id);
    std::vector<int64_t> shape = concrete_shape(v.type.shape, b);
    if (v.name.rfind("__ones", 0) == 0) {
      Tensor t = Tensor::zeros(DType::F32, shape);
      std::fill(t.data.begin(), t.data.end(), 1.0f);
      in[v.name] = std::move(t);
    } else {
      in[v.name] = random_tensor(DType::F32, shape, seed, v.name);
    }
  }
  return in;
}

// Every dim of `a` and then of `b`.
std::vector<std::string> all_dims(const Program& a, const Program& b) {
  std::vector<std::string> dims = a.dims;
  for (const auto& d : b.dims)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) dims.push_back(d);
  return dims;
}

bool has_16_bit(const Program& p) {
  return std::any_of(p.values.begin(), p.values.end(), [](const Value& v) { return v.type.dtype == DType::F16 || v.type.dtype == DType::BF16; });
}

std::string bindings_text(const DimBindings& b) {
  std::string out;
  for (const auto& [name, value] : b) out += (out.empty() ? "" : " ") + name + "=" + std::to_string(value);
  return out;
}

std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

// Where `x` (of a) and `y` (of b) part: one NaN or infinite where the other is not, or a
// difference beyond `tolerance` times the larger finite magnitude. Empty when they agree.
std::optional<std::string> float_difference(const Tensor& x, const Tensor& y, double tolerance) {
  if (x.shape != y.shape) return "the outputs have different shapes " + shape_text(x.shape) + " and " + shape_text(y.shape);
  double diff = 0, scale = 1e-30;
  size_t worst = 0;
  for (size_t i = 0; i < x.data.size(); ++i) {
    const float u = x.data[i], v = y.data[i];
    if (std::isfinite(u) != std::isfinite(v))
      return "element " + std::to_string(i) + " is " + number_text(u) + " on the left and " + number_text(v) + " on the right";
    if (!std::isfinite(u)) continue;
    scale = std::max({scale, double(std::fabs(u)), double(std::fabs(v))});
    if (std::fabs(double(u) - v) > diff) diff = std::fabs(double(u) - v), worst = i;
  }
  if (diff <= tolerance * scale) return std::nullopt;
  return "element " + std::to_string(worst) + " is " + number_text(x.data[worst]) + " on the left and " + number_text(y.data[worst]) +
         " on the right (" + number_text(diff / scale) + " of the output's magnitude)";
}

}  // namespace

FloatCheck check_floating_point(const Program& a, const Program& b, const CancelToken* cancel) {
  FloatCheck fc;
  const std::vector<std::string> dims = all_dims(a, b);
  static const int64_t kValues[] = {4, 6, 8, 12, 3, 5, 2};
  std::mt19937_64 rng(0xf10a7);
  const uint64_t seed = 77;
  for (int attempt = 0; attempt < 200; ++attempt) {
    DimBindings bind;
    for (const auto& d : dims) bind[d] = attempt == 0 ? 4 : kValues[rng() % (sizeof(kValues) / sizeof(kValues[0]))];
    if (!binding_fits(a, bind) || !binding_fits(b, bind)) continue;
    // Seeded inputs at their declared dtypes (an outlier of 1e20 is past f16's range).
    std::map<std::string, Tensor> seeded = inputs_for(b, bind, seed);
    for (auto& [name, t] : inputs_for(a, bind, seed)) seeded[name] = std::move(t);
    for (const Program* p : {&a, &b})
      for (int id : p->inputs) {
        Tensor& t = seeded.at(p->value(id).name);
        t.dtype = p->value(id).type.dtype;
        round_all(t.dtype, t.data.data(), t.data.size());
      }
    std::vector<FloatEdge> sets{{"seeded inputs", [&] { return seeded; }}};
    for (FloatEdge& e : float_edges(a, bind, seeded, seed, FloatEdgeOptions{true, true})) sets.push_back(std::move(e));
    const double tolerance = has_16_bit(a) || has_16_bit(b) ? 2e-2 : 1e-4;
    for (const FloatEdge& set : sets) {
      std::map<std::string, Tensor> named = set.make();
      for (const auto& [name, t] : seeded) named.emplace(name, t);
      std::vector<Tensor> ra, rb;
      try {
        ra = interpret(with_every_value(a), bind, named, cancel);
        rb = interpret(with_every_value(b), bind, named, cancel);
      } catch (const Error& e) {
        if (e.kind() == Error::Kind::Cancelled) throw;
        if (set.name == "seeded inputs") break;  // this binding does not suit the programs
        continue;
      }
      // Both overflow inside: what follows is no answer to judge either by (float_edges.h). One
      // alone: it is judged, and differs where the other is finite (log(exp(x)) against x).
      if (overflowed(ra, named) && overflowed(rb, named)) continue;
      fc.ran = true;
      ++fc.inputs;
      if (auto why = float_difference(ra.at(0), rb.at(0), tolerance)) {
        fc.refuted = true;
        fc.set = set.name;
        fc.detail = "at " + bindings_text(bind) + ", " + *why;
        return fc;
      }
    }
    if (fc.ran) return fc;
  }
  return fc;
}

// Compiles `expr` as the body of a program with the parameters of `context`: the inline side of
// an equivalence. Names inside [ ] that are not dims of the context (split factors) become dims
// through an extra parameter that the expression never reads.
Program compile_expression(const Program& context, const std::string& expr) {
  std::vector<std::string> params, extra;
  for (int id : context.inputs) params.push_back(context.value(id).name + ": " + type_str(context.value(id).type));
  int depth = 0;
  for (const Token& t : lex(expr)) {
    if (t.kind == Tok::LBracket) ++depth;
    if (t.kind == Tok::RBracket) --depth;
    if (depth > 0 && t.kind == Tok::Ident && std::find(context.dims.begin(), context.dims.end(), t.text) == context.dims.end() &&
        std::find(extra.begin(), extra.end(), t.text) == extra.end())
      extra.push_back(t.text);
  }
  if (!extra.empty()) params.push_back("__dims: f32[" + join(extra, ", ") + "]");
  const std::string text = "program __expr(" + join(params, ", ") + ") {\n  return " + expr + "\n}\n";
  CompileResult r = compile_text(text, "<expression>");
  std::vector<std::string> errors;
  for (const auto& d : r.diagnostics)
    if (d.severity == Severity::Error) errors.push_back(d.message);
  if (!errors.empty() || r.programs.size() != 1)
    throw Error(Error::Kind::InvalidArgument, "expression '" + expr + "' (over the inputs of '" + context.name + "'): " +
                                                  (errors.empty() ? std::string("does not compile") : join(errors, "; ")));
  Program p = lower_composites(r.programs[0]);
  p.name = expr;
  return p;
}

namespace {

// The dtypes `p`'s rounding casts round to (rounding_casts.h), sorted.
std::vector<std::string> rounding_dtypes(const Program& p) {
  std::vector<std::string> out;
  const std::vector<bool> rounds = rounding_casts(p);
  for (const Value& v : p.values)
    if (rounds[size_t(v.id)]) out.push_back(dtype_name(v.type.dtype));
  std::sort(out.begin(), out.end());
  return out;
}

// Why a proof may be out of reach: the sides round at different places. Empty when they round
// to the same dtypes equally often.
std::string rounding_difference(const Program& a, const Program& b) {
  const std::vector<std::string> ra = rounding_dtypes(a), rb = rounding_dtypes(b);
  if (ra == rb) return "";
  auto says = [](const Program& p, const std::vector<std::string>& casts) {
    return "'" + p.name + "' " + (casts.empty() ? "nowhere" : "to " + join(casts, ", "));
  };
  return "; the sides round differently inside wider computations (" + says(a, ra) + ", " + says(b, rb) +
         ") and proofs keep such casts (docs/design.md, \"Casts in proofs\")";
}

}  // namespace

std::optional<Counterexample> find_counterexample(const Program& a0, const Program& b0, const CancelToken* cancel, int bindings_wanted) {
  const Program a = as_f32(a0), b = as_f32(b0);
  const std::vector<std::string> dims = all_dims(a, b);
  static const int64_t kValues[] = {2, 3, 4, 5, 6, 8, 12};
  std::mt19937_64 rng(0x5eed);
  std::set<DimBindings> tried;
  int found = 0;
  for (int attempt = 0; attempt < 2000 && found < bindings_wanted; ++attempt) {
    DimBindings bind;
    for (const auto& d : dims) bind[d] = kValues[rng() % (sizeof(kValues) / sizeof(kValues[0]))];
    if (!tried.insert(bind).second || !binding_fits(a, bind) || !binding_fits(b, bind)) continue;
    ++found;
    const uint64_t seed = 1000 + uint64_t(attempt);
    std::vector<Tensor> ra, rb;
    try {
      ra = interpret(a, bind, inputs_for(a, bind, seed), cancel);
      rb = interpret(b, bind, inputs_for(b, bind, seed), cancel);
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::Cancelled) throw;
      --found;  // this binding does not suit the programs after all
      continue;
    }
    Counterexample cx{bind, seed, 0, ""};
    const Tensor &x = ra.at(0), &y = rb.at(0);
    if (x.shape != y.shape) {
      cx.max_abs_diff = INFINITY;
      cx.detail = "the outputs have different shapes " + shape_text(x.shape) + " and " + shape_text(y.shape);
      return cx;
    }
    double diff = 0, scale = 0;
    size_t worst = 0;
    for (size_t i = 0; i < x.data.size(); ++i) {
      double u = x.data[i], v = y.data[i];
      if (std::isnan(u) && std::isnan(v)) continue;
      double d = std::isnan(u) || std::isnan(v) ? INFINITY : std::fabs(u - v);
      if (d > diff) diff = d, worst = i;
      if (std::isfinite(u)) scale = std::max(scale, std::fabs(u));
    }
    if (diff > 1e-3 * (1 + scale)) {
      cx.max_abs_diff = diff;
      cx.detail = "element " + std::to_string(worst) + ": " + std::to_string(x.data[worst]) + " vs " + std::to_string(y.data[worst]);
      return cx;
    }
  }
  return std::nullopt;
}

struct ResidentEGraph::State {
  eg::TensorGraph tg;
  std::vector<eg::Rewrite> rules;
  eg::Runner runner;
  std::map<std::string, std::vector<eg::Id>> programs;
  uint64_t added = 0, shared = 0;
  size_t cap;
  bool cap_hit = false;

  std::vector<bool> grid_rules;  // Rewrite::lifts_grid, per rule

  explicit State(size_t node_cap) : rules(eg::tensor_axioms(tg)), runner(&rules), cap(node_cap) {
    for (const eg::Rewrite& r : rules) grid_rules.push_back(r.lifts_grid);
  }

  eg::AddedTerms add(const Program& p) {
    eg::AddedTerms t = eg::add_program(tg, p);
    added += t.added;
    shared += t.shared;
    return t;
  }
  std::string cap_message() const {
    if (!cap_hit) return "";
    return "the resident e-graph reached its cap of " + std::to_string(cap) + " e-nodes (it holds " + std::to_string(tg.graph().num_nodes()) +
           "); proofs that need more terms stop at the node limit";
  }
};

ResidentEGraph::ResidentEGraph(size_t node_cap) : state_(std::make_unique<State>(node_cap)) {}
ResidentEGraph::~ResidentEGraph() = default;

void ResidentEGraph::set_program(const std::string& name, const Program& lowered) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_->programs[name] = state_->add(lowered).outputs;
}

void ResidentEGraph::drop_program(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_->programs.erase(name);  // the classes stay: other programs may share them
}

bool ResidentEGraph::has_program(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_->programs.count(name) > 0;
}

EquivResult ResidentEGraph::equivalent(const Program& a, const Program& b, const EquivLimits& limits, const CancelToken* cancel) {
  for (const Program* p : {&a, &b})
    if (p->outputs.size() != 1)
      throw Error(Error::Kind::InvalidArgument, "'" + p->name + "' has " + std::to_string(p->outputs.size()) + " outputs; equivalence compares one output with one");
  EquivResult r;
  std::optional<Counterexample> cx;
  try {
    cx = find_counterexample(a, b, cancel);
  } catch (const Error& e) {
    if (e.kind() != Error::Kind::Cancelled) throw;
    r.verdict = EquivResult::Verdict::NotProved;
    r.stop_reason = StopReason::Cancelled;
    r.message = "cancelled during the numeric check";
    return r;
  }

  if (cx) {
    std::lock_guard<std::mutex> lock(mutex_);
    State& s = *state_;
    r.a_text = s.tg.print(s.add(a).outputs[0]);
    r.b_text = s.tg.print(s.add(b).outputs[0]);
    r.verdict = EquivResult::Verdict::Refuted;
    r.stop_reason = StopReason::Counterexample;
    r.counterexample = std::move(cx);
    r.message = "the reference interpreter gives different values: " + r.counterexample->detail;
    return r;
  }
  r = prove(a, b, limits, cancel);
  if (r.stop_reason == StopReason::Cancelled) return r;
  if (r.verdict == EquivResult::Verdict::NotProved) r.message += rounding_difference(a, b);
  try {
    r.floating = check_floating_point(a, b, cancel);
  } catch (const Error& e) {
    if (e.kind() != Error::Kind::Cancelled) throw;
    r.stop_reason = StopReason::Cancelled;
    r.message = "cancelled during the check in floating point";
  }
  return r;
}

EquivResult ResidentEGraph::prove(const Program& a, const Program& b, const EquivLimits& limits, const CancelToken* cancel) {
  if (a.outputs.size() != 1)
    throw Error(Error::Kind::InvalidArgument, "'" + a.name + "' has " + std::to_string(a.outputs.size()) + " outputs; equivalence compares one output with one");
  // The builder runs under prove's lock, so reaching into the state is safe.
  return prove([this, &a](eg::TensorGraph&) { return state_->add(a).outputs[0]; }, b, limits, cancel);
}

EquivResult ResidentEGraph::prove(const TermBuilder& build_a, const Program& b, const EquivLimits& limits, const CancelToken* cancel) {
  if (b.outputs.size() != 1)
    throw Error(Error::Kind::InvalidArgument, "'" + b.name + "' has " + std::to_string(b.outputs.size()) + " outputs; equivalence compares one output with one");
  EquivResult r;
  std::lock_guard<std::mutex> lock(mutex_);
  State& s = *state_;
  eg::Id ia = build_a(s.tg), ib = s.add(b).outputs[0];
  r.a_text = s.tg.print(ia);
  r.b_text = s.tg.print(ib);
  eg::EGraph& g = s.tg.graph();
  // The grid first: a family's term is its program's with partitions and replicates pushed
  // into the leaves, and lifting them back out needs no algebra. With every rule at once the
  // algebra's matches bury the lifts (the scheduler bans them) and two grid axes over a
  // LayerNorm ran past 30 iterations (docs/search.md, "Proofs: the grid first"). Then, if the
  // two sides still differ, every rule, in the time left.
  const auto goal = [&] { return g.find(ia) == g.find(ib); };
  eg::RunLimits run{std::min(s.cap, g.num_nodes() + limits.node_limit), limits.iter_limit, limits.time_limit_s};
  eg::RunReport rep = s.runner.run(g, run, cancel, goal, s.grid_rules);
  if (rep.stop == eg::StopReason::Saturated || rep.stop == eg::StopReason::IterLimit) {
    run.time_limit_s = std::max(0.0, limits.time_limit_s - rep.seconds);
    rep = s.runner.run(g, run, cancel, goal);
  }
  if (g.num_nodes() >= s.cap) s.cap_hit = true;
  r.stop_reason = rep.stop;
  if (g.find(ia) == g.find(ib)) {
    r.verdict = EquivResult::Verdict::Proved;
    r.explanation = eg::explain(s.tg, s.rules, ia, ib);
    for (const std::string& name : eg::explanation_rules(s.tg, s.rules, ia, ib)) {
      auto rule = std::find_if(s.rules.begin(), s.rules.end(), [&](const eg::Rewrite& w) { return w.name == name; });
      if (rule != s.rules.end() && rule->reals_only && std::find(r.reals_only_rules.begin(), r.reals_only_rules.end(), name) == r.reals_only_rules.end())
        r.reals_only_rules.push_back(name);
    }
    return r;
  }
  r.verdict = EquivResult::Verdict::NotProved;
  r.message = std::string("not proved: saturation stopped (") + stop_reason_name(rep.stop) + ") after " + std::to_string(rep.iterations) +
              " iterations with " + std::to_string(rep.nodes) + " e-nodes";
  if (s.tg.shape_of(ia) != s.tg.shape_of(ib)) r.message += "; the two sides have different shapes";
  if (s.cap_hit) r.message += "; " + s.cap_message();
  return r;
}

EGraphStats ResidentEGraph::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const State& s = *state_;
  EGraphStats st;
  st.nodes = s.tg.graph().num_nodes();
  st.classes = s.tg.graph().num_classes();
  st.memory_bytes = s.tg.graph().memory_bytes();
  st.node_cap = s.cap;
  st.cap_hit = s.cap_hit;
  st.cap_message = s.cap_message();
  st.programs = s.programs.size();
  st.rules = s.runner.stats();
  st.terms_added = s.added;
  st.terms_shared = s.shared;
  return st;
}

}  // namespace prism
