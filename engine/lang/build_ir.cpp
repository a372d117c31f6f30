#include "engine/lang/build_ir.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "engine/ir/infer_shapes.h"
#include "engine/lang/op_signature.h"
#include "engine/lang/suggest.h"

namespace prism {

namespace {

constexpr int kPoison = -1;  // a value whose definition failed; uses of it report nothing more
constexpr size_t kMaxDiagnostics = 100;  // per program; after that checking stops

struct Result {
  int id = kPoison;
  int count = 1;  // split yields `count` consecutive values
  bool ok() const { return id != kPoison; }
};

struct Binding {
  int id = kPoison;
  int line = 0;
};

class Builder {
 public:
  Builder(const ProgramAst& ast, const std::string& file) : ast_(ast), file_(file) {}

  BuildResult run() {
    prog_.name = ast_.name;
    prog_.file = file_;
    prog_.pos = ast_.name_range;
    for (const auto& p : ast_.params) taken_.insert(p.name);
    for (const auto& s : ast_.body)
      for (const auto& t : s.targets) taken_.insert(t);
    params();
    body();
    name_unnamed_values();
    BuildResult out;
    out.diagnostics = std::move(diags_);
    if (out.diagnostics.empty()) out.program = std::move(prog_);
    return out;
  }

 private:
  void error(const SourceRange& r, const std::string& msg) {
    if (diags_.size() < kMaxDiagnostics) diags_.push_back({file_, r, Severity::Error, msg});
    else if (diags_.size() == kMaxDiagnostics) diags_.push_back({file_, r, Severity::Error, "too many errors in this program; stopping here"});
  }
  bool gave_up() const { return diags_.size() > kMaxDiagnostics; }

  std::string fresh_name(const std::string& base, bool numbered) {
    if (!numbered && !taken_.count(base)) {
      taken_.insert(base);
      return base;
    }
    // Numbering continues where the last name of this base stopped, so naming stays linear.
    for (int& i = next_number_[base];; ++i) {
      std::string n = base + std::to_string(i);
      if (!taken_.count(n)) {
        taken_.insert(n);
        return n;
      }
    }
  }

  int add_value(Op op, std::vector<int> operands, Attrs attrs, Type type, const SourceRange& pos) {
    Value v;
    v.id = int(prog_.values.size());
    v.op = op;
    v.operands = std::move(operands);
    v.attrs = std::move(attrs);
    v.type = std::move(type);
    v.pos = pos;
    prog_.values.push_back(std::move(v));
    return prog_.values.back().id;
  }

  int make_const(Constant c, const SourceRange& pos) {
    Attrs a;
    a.constant = std::move(c);
    return add_value(Op::Const, {}, std::move(a), Type{DType::F32, {}, true}, pos);
  }

  const Value* const_of(int id) const {
    return id != kPoison && prog_.value(id).op == Op::Const ? &prog_.value(id) : nullptr;
  }

  // ---- dims -------------------------------------------------------------------------------

  std::optional<Dim> to_dim(const Expr& e, bool introduce) {
    try {
      switch (e.kind) {
        case Expr::Kind::Name:
          if (std::find(prog_.dims.begin(), prog_.dims.end(), e.name) == prog_.dims.end()) {
            if (!introduce) {
              auto near = nearest_name(e.name, prog_.dims);
              error(e.range, "unknown dim '" + e.name + "'" + (near ? "; did you mean '" + *near + "'?" : ""));
              return std::nullopt;
            }
            prog_.dims.push_back(e.name);
          }
          return Dim::symbol(e.name);
        case Expr::Kind::Number:
          if (!e.is_integer) {
            error(e.range, "dims are integers but found a number with a fraction or exponent");
            return std::nullopt;
          }
          return Dim(e.integer);
        case Expr::Kind::Neg: {
          auto d = to_dim(*e.args[0], introduce);
          if (!d) return std::nullopt;
          return -*d;
        }
        case Expr::Kind::Binary: {
          if (e.op != "+" && e.op != "-" && e.op != "*" && e.op != "/") {
            error(e.range, "'" + e.op + "' cannot appear in a dim expression");
            return std::nullopt;
          }
          auto a = to_dim(*e.args[0], introduce);
          auto b = a ? to_dim(*e.args[1], introduce) : std::nullopt;
          if (!a || !b) return std::nullopt;
          if (e.op == "+") return *a + *b;
          if (e.op == "-") return *a - *b;
          if (e.op == "*") return *a * *b;
          return *a / *b;
        }
        default:
          error(e.range, "expected a dim (a name, an integer, or + - * / of them)");
          return std::nullopt;
      }
    } catch (const DimError& err) {
      error(e.range, std::string("dim expression: ") + err.what());
      return std::nullopt;
    }
  }

  // ---- parameters -------------------------------------------------------------------------

  void params() {
    for (const auto& p : ast_.params) {
      int id = kPoison;
      bool ok = true;
      auto dtype = parse_dtype(p.dtype);
      if (!dtype) {
        error(p.dtype_range, "unknown dtype '" + p.dtype + "'; expected f32, f16 or bf16");
        ok = false;
      }
      std::vector<Dim> shape;
      for (const auto& d : p.dims) {
        auto dim = to_dim(*d, true);
        if (!dim) {
          ok = false;
          continue;
        }
        auto c = dim->constant_value();
        if (c && !(c->is_integer() && c->num() > 0)) {
          error(d->range, "dim " + dim->str() + " is not a positive integer");
          ok = false;
        }
        shape.push_back(*dim);
      }
      if (auto it = scope_.find(p.name); it != scope_.end()) {
        error(p.range, "'" + p.name + "' is already defined (line " + std::to_string(it->second.line) + ")");
        continue;
      }
      if (ok) {
        id = add_value(Op::Input, {}, {}, Type{*dtype, shape, false}, p.range);
        prog_.values[size_t(id)].name = p.name;
        prog_.values[size_t(id)].named = true;
        prog_.values[size_t(id)].domain = p.domain;
        prog_.inputs.push_back(id);
      }
      scope_[p.name] = {id, p.range.begin.line};
    }
    for (const auto& p : ast_.params)
      if (std::find(prog_.dims.begin(), prog_.dims.end(), p.name) != prog_.dims.end())
        error(p.range, "'" + p.name + "' names both a dim and an input; use different names");
  }

  // ---- statements -------------------------------------------------------------------------

  void body() {
    bool returned = false;
    for (const auto& s : ast_.body) {
      if (gave_up()) return;
      if (returned) {
        error(s.range, "statement after 'return'; 'return' must be the last statement");
        continue;
      }
      if (s.is_return) {
        returned = true;
        for (const auto& e : s.values) {
          Result r = single(eval(*e), e->range);
          if (r.ok() && const_of(r.id)) {
            error(e->range, "return: a constant is not a tensor of the program");
            continue;
          }
          if (r.ok()) prog_.outputs.push_back(r.id);
        }
      } else {
        assign(s);
      }
    }
    if (!returned) error(ast_.name_range, "program '" + ast_.name + "' has no return");
  }

  void assign(const StmtAst& s) {
    bool targets_ok = true;
    std::set<std::string> here;
    for (size_t i = 0; i < s.targets.size(); ++i) {
      const std::string& t = s.targets[i];
      if (std::find(prog_.dims.begin(), prog_.dims.end(), t) != prog_.dims.end()) {
        error(s.target_ranges[i], "'" + t + "' is a dim of the program and cannot name a value");
        targets_ok = false;
      } else if (auto it = scope_.find(t); it != scope_.end()) {
        error(s.target_ranges[i], "'" + t + "' is already defined (line " + std::to_string(it->second.line) + ")");
        targets_ok = false;
      } else if (!here.insert(t).second) {
        error(s.target_ranges[i], "'" + t + "' appears twice on the left of '='");
        targets_ok = false;
      }
    }
    const Expr& e = *s.values[0];
    Result r = eval(e);
    if (r.ok() && r.count != int(s.targets.size())) {
      std::string what = e.kind == Expr::Kind::Call ? "'" + e.name + "'" : "the expression";
      error(s.range, what + " gives " + std::to_string(r.count) + (r.count == 1 ? " value" : " values") + " but " +
                         std::to_string(s.targets.size()) + (s.targets.size() == 1 ? " name is" : " names are") +
                         " on the left of '='");
      r.id = kPoison;
    }
    if (!targets_ok) {
      // Names that were free (or shadow a dim) become poisoned so their uses stay quiet.
      for (const auto& t : s.targets)
        if (!scope_.count(t)) scope_[t] = {};
      return;
    }
    for (size_t i = 0; i < s.targets.size(); ++i) {
      int id = r.ok() ? r.id + int(i) : kPoison;
      if (id != kPoison) {
        Value& v = prog_.values[size_t(id)];
        if (!v.named && v.op != Op::Const) {
          v.name = s.targets[i];
          v.named = true;
          v.pos = s.target_ranges[i];
        }
      }
      scope_[s.targets[i]] = {id, s.target_ranges[i].begin.line};
    }
  }

  void name_unnamed_values() {
    taken_.insert(prog_.dims.begin(), prog_.dims.end());
    for (size_t i = 0; i < prog_.outputs.size(); ++i) {
      Value& v = prog_.values[size_t(prog_.outputs[i])];
      if (v.name.empty()) v.name = prog_.outputs.size() == 1 ? fresh_name("out", false) : fresh_name("out" + std::to_string(i), false);
    }
    for (auto& v : prog_.values)
      if (v.name.empty() && v.op != Op::Const) v.name = fresh_name("t", true);
  }

  // ---- expressions ------------------------------------------------------------------------

  Result single(Result r, const SourceRange& range) {
    if (r.ok() && r.count != 1) {
      error(range, "split gives " + std::to_string(r.count) + " values; assign them to names first (A, B = split(...))");
      return {};
    }
    return r;
  }

  std::vector<std::string> visible_names() const {
    std::vector<std::string> names;
    for (const auto& [n, b] : scope_) names.push_back(n);
    names.insert(names.end(), prog_.dims.begin(), prog_.dims.end());
    return names;
  }

  Result eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Name: {
        if (auto it = scope_.find(e.name); it != scope_.end()) return {it->second.id, 1};
        if (std::find(prog_.dims.begin(), prog_.dims.end(), e.name) != prog_.dims.end())
          return {make_const(Constant{Dim::symbol(e.name), 0}, e.range), 1};
        if (e.name == "inf") return {make_const(Constant{std::nullopt, INFINITY}, e.range), 1};  // float("inf"), masks' -inf
        auto near = nearest_name(e.name, visible_names());
        error(e.range, "undefined name '" + e.name + "'" + (near ? "; did you mean '" + *near + "'?" : ""));
        return {};
      }
      case Expr::Kind::Number:
        if (e.is_integer) return {make_const(Constant{Dim(e.integer), 0}, e.range), 1};
        if (e.decimal) return {make_const(Constant{Dim::constant(*e.decimal), e.number}, e.range), 1};
        return {make_const(Constant{std::nullopt, e.number}, e.range), 1};
      case Expr::Kind::Bool:
        error(e.range, std::string("expected a tensor but found '") + (e.boolean ? "true" : "false") + "'");
        return {};
      case Expr::Kind::List:
        error(e.range, "expected a tensor but found a list");
        return {};
      case Expr::Kind::Neg: {
        Result x = single(eval(*e.args[0]), e.args[0]->range);
        if (!x.ok()) return {};
        if (const Value* c = const_of(x.id)) {
          Constant k = c->attrs.constant;
          if (k.exact) k.exact = -*k.exact;
          k.number = -k.number;
          return {make_const(k, e.range), 1};
        }
        return emit(Op::Neg, {x.id}, {}, e.range);
      }
      case Expr::Kind::Binary: {
        Result a = single(eval(*e.args[0]), e.args[0]->range);
        Result b = single(eval(*e.args[1]), e.args[1]->range);
        if (!a.ok() || !b.ok()) return {};
        return binary(e.op, a.id, b.id, e.range);
      }
      case Expr::Kind::Attribute:
        return attribute(e);
      case Expr::Kind::Call:
        return call(e);
    }
    return {};
  }

  // A binary operator's value: arithmetic (folded on constants), a matmul, a power, a comparison
  // (`a < b` as `b > a`, the same for NaN).
  Result binary(const std::string& op, int a, int b, const SourceRange& range) {
    if (op == "**") return power(a, b, range);
    if (op == ">") return compare(Op::Gt, a, b, range);
    if (op == ">=") return compare(Op::Ge, a, b, range);
    if (op == "<") return compare(Op::Gt, b, a, range);
    if (op == "<=") return compare(Op::Ge, b, a, range);
    if (op == "==") return compare(Op::Eq, a, b, range);
    if (op == "!=") return compare(Op::Ne, a, b, range);
    if (op == "@") return emit(Op::Matmul, {a, b}, {}, range);
    const Op arith = op == "+" ? Op::Add : op == "-" ? Op::Sub : op == "*" ? Op::Mul : Op::Div;
    if (auto folded = fold(arith, a, b, range)) return *folded;
    return emit(arith, {a, b}, {}, range);
  }

  std::optional<double> number_of(int id) const {
    const Value* c = const_of(id);
    if (!c) return std::nullopt;
    if (!c->attrs.constant.exact) return c->attrs.constant.number;
    if (auto v = c->attrs.constant.exact->constant_value()) return v->to_double();
    return std::nullopt;
  }

  Result compare(Op op, int a, int b, const SourceRange& range) {
    const auto x = number_of(a), y = number_of(b);
    if (x && y) {
      const bool r = op == Op::Gt ? *x > *y : op == Op::Ge ? *x >= *y : op == Op::Eq ? *x == *y : *x != *y;
      return {make_const(Constant{Dim(r ? 1 : 0), 0}, range), 1};
    }
    return emit(op, {a, b}, {}, range);
  }

  // x ** y (and pow(x, y)): with a constant exponent, the op PyTorch computes it with (x * x for
  // 2, sqrt for 0.5, 1 / x for -1 …), so that the search sees the op it has rules for; else pow.
  Result power(int x, int y, const SourceRange& range) {
    const auto base = number_of(x), exponent = number_of(y);
    if (base && exponent) return {make_const(Constant{std::nullopt, std::pow(*base, *exponent)}, range), 1};
    if (exponent) {
      if (*exponent == 1) return {x, 1};
      if (*exponent == 2) return emit(Op::Square, {x}, {}, range);
      if (*exponent == 3) {
        Result square = emit(Op::Square, {x}, {}, range);
        return square.ok() ? emit(Op::Mul, {square.id, x}, {}, range) : square;
      }
      if (*exponent == 0.5) return emit(Op::Sqrt, {x}, {}, range);
      if (*exponent == -0.5) return emit(Op::Rsqrt, {x}, {}, range);
      if (*exponent == -1) return emit(Op::Div, {make_const(Constant{Dim(1), 0}, range), x}, {}, range);
    }
    return emit(Op::Pow, {x, y}, {}, range);
  }

  // X.T (a 2-D transpose, as PyTorch's) and X.mT (the last two dims).
  Result attribute(const Expr& e) {
    Result x = single(eval(*e.args[0]), e.args[0]->range);
    if (!x.ok()) return {};
    const size_t rank = prog_.value(x.id).type.shape.size();
    if (e.name == "T" && rank != 2) {
      error(e.range, "'.T' transposes a 2-D value, and this one has rank " + std::to_string(rank) +
                         "; write transpose(x, perm=[...]) or '.mT' for the last two dims");
      return {};
    }
    if (e.name == "T" || e.name == "mT") return emit(Op::Transpose, {x.id}, {}, e.range);
    error(e.name_range, "unknown attribute '." + e.name + "'; values have '.T' (a 2-D transpose) and '.mT' (the last two dims)");
    return {};
  }

  // Folds arithmetic on two constants: exactly when both are exact (so `d/2` stays a dim), in
  // floating point when both are plain numbers (or exact ones whose product or sum would not fit
  // 64 bits: long chains of decimals). Anything else is left to the program.
  std::optional<Result> fold(Op op, int a, int b, const SourceRange& range) {
    const Value* ca = const_of(a);
    const Value* cb = const_of(b);
    if (!ca || !cb) return std::nullopt;
    const Constant& x = ca->attrs.constant;
    const Constant& y = cb->attrs.constant;
    try {
      if (x.exact && y.exact) {
        Dim r = op == Op::Add ? *x.exact + *y.exact : op == Op::Sub ? *x.exact - *y.exact
              : op == Op::Mul ? *x.exact * *y.exact : *x.exact / *y.exact;
        return Result{make_const(Constant{r, 0}, range), 1};
      }
    } catch (const DimError& err) {
      const bool numbers = x.exact->constant_value() && y.exact->constant_value() && !(op == Op::Div && y.exact->constant_value()->is_zero());
      if (!numbers) {
        error(range, std::string("constant expression: ") + err.what());
        return Result{};
      }
    }
    auto numeric = [](const Constant& c) -> std::optional<double> {
      if (!c.exact) return c.number;
      if (auto v = c.exact->constant_value()) return v->to_double();
      return std::nullopt;
    };
    auto nx = numeric(x), ny = numeric(y);
    if (!nx || !ny) return std::nullopt;
    double r = op == Op::Add ? *nx + *ny : op == Op::Sub ? *nx - *ny : op == Op::Mul ? *nx * *ny : *nx / *ny;
    return Result{make_const(Constant{std::nullopt, r}, range), 1};
  }

  Result emit(Op op, std::vector<int> operands, Attrs attrs, const SourceRange& range) {
    std::vector<Type> types;
    for (int id : operands) types.push_back(prog_.value(id).type);
    if (op == Op::Split) {
      int first = kPoison;
      // At least one round, so that a bad part count is reported by infer_type.
      for (int i = 0; i < std::max(attrs.parts, 1); ++i) {
        Attrs a = attrs;
        a.index = i;
        Inferred t = infer_type(op, a, types);
        if (!t.type) {
          error(range, t.error);
          return {};
        }
        int id = add_value(op, operands, a, *t.type, range);
        if (i == 0) first = id;
      }
      return {first, attrs.parts};
    }
    Inferred t = infer_type(op, attrs, types);
    if (!t.type) {
      error(range, t.error);
      return {};
    }
    return {add_value(op, std::move(operands), std::move(attrs), *t.type, range), 1};
  }

  // ---- calls ------------------------------------------------------------------------------

  std::optional<int64_t> int_of(const Expr& e) {
    if (e.kind == Expr::Kind::Number && e.is_integer) return e.integer;
    if (e.kind == Expr::Kind::Neg && e.args[0]->kind == Expr::Kind::Number && e.args[0]->is_integer)
      return -e.args[0]->integer;
    return std::nullopt;
  }

  std::optional<int> small_int(const Expr& e, const std::string& what) {
    auto v = int_of(e);
    if (!v || *v < std::numeric_limits<int>::min() / 2 || *v > std::numeric_limits<int>::max() / 2) {
      error(e.range, what + " must be an integer");
      return std::nullopt;
    }
    return int(*v);
  }

  // The arguments of a call to `who` with parameters `names`, positional ones before keyword ones,
  // each bound once, every `required` one given; PyTorch's dim= and keepdim= read as axis= and
  // keepdims=. Null entries: not given. Each mistake is an error at the argument that made it.
  std::optional<std::vector<const Expr*>> bind(const Expr& e, const std::string& who, const std::vector<std::string>& names,
                                               const std::vector<bool>& required) {
    std::vector<const Expr*> bound(names.size(), nullptr);
    bool ok = true, seen_keyword = false;
    size_t next_positional = 0;
    auto fail = [&](const SourceRange& at, const std::string& message) {
      error(at, who + ": " + message);
      ok = false;
    };
    for (size_t i = 0; i < e.args.size(); ++i) {
      const Expr& arg = *e.args[i];
      const std::string& given = e.keywords[i];
      if (given.empty()) {
        if (seen_keyword) fail(arg.range, "positional argument after a keyword argument");
        else if (next_positional >= names.size()) fail(arg.range, "too many arguments (takes at most " + std::to_string(names.size()) + ")");
        else bound[next_positional++] = &arg;
        continue;
      }
      seen_keyword = true;
      const std::string kw = given == "dim" ? "axis" : given == "keepdim" ? "keepdims" : given;
      const size_t at = size_t(std::find(names.begin(), names.end(), kw) - names.begin());
      if (at == names.size()) {
        auto near = nearest_name(kw, names);
        fail(e.keyword_ranges[i], "unknown argument '" + given + "'" + (near ? "; did you mean '" + *near + "'?" : ""));
      } else if (bound[at]) {
        fail(e.keyword_ranges[i], "argument '" + names[at] + "' given twice");
      } else {
        bound[at] = &arg;
      }
    }
    for (size_t i = 0; i < names.size() && ok; ++i)  // a misspelled argument is not missing too
      if (required[i] && !bound[i]) fail(e.range, "missing argument '" + names[i] + "'");
    if (!ok) return std::nullopt;
    return bound;
  }

  // bind() for parameters of which the first `required` must be given.
  std::optional<std::vector<const Expr*>> bind(const Expr& e, const std::vector<std::string>& names, size_t required) {
    std::vector<bool> needed(names.size(), false);
    std::fill(needed.begin(), needed.begin() + std::ptrdiff_t(required), true);
    return bind(e, e.name, names, needed);
  }

  Result operand(const Expr* arg) { return arg ? single(eval(*arg), arg->range) : Result{}; }
  bool is_zero(int id) const { return number_of(id) == 0.0; }

  // where(c, a, b): a where c is nonzero, else b, as mask(c, a) + mask(c == 0, b). mask selects,
  // so a -inf or NaN in the branch not taken stays out (a product c * a would give NaN).
  Result where(const Expr& e) {
    auto args = bind(e, {"condition", "input", "other"}, 3);
    if (!args) return {};
    Result c = operand((*args)[0]), a = operand((*args)[1]), b = operand((*args)[2]);
    if (!c.ok() || !a.ok() || !b.ok()) return {};
    Result taken = is_zero(a.id) && !is_zero(b.id) ? Result{} : emit(Op::Mask, {c.id, a.id}, {}, e.range);
    if (is_zero(b.id) && taken.ok()) return taken;
    Result not_c = emit(Op::Eq, {c.id, make_const(Constant{Dim(0), 0}, e.range)}, {}, e.range);
    Result other = not_c.ok() ? emit(Op::Mask, {not_c.id, b.id}, {}, e.range) : not_c;
    if (!taken.ok() || !other.ok()) return other;
    return emit(Op::Add, {taken.id, other.id}, {}, e.range);
  }

  // clamp(x, min, max), either bound optional: maximum with min, then minimum with max (NaN stays).
  Result clamp(const Expr& e) {
    auto args = bind(e, {"input", "min", "max"}, 1);
    if (!args) return {};
    if (!(*args)[1] && !(*args)[2]) {
      error(e.range, "clamp: give min=, max= or both");
      return {};
    }
    Result x = operand((*args)[0]);
    for (auto [arg, op] : {std::pair{(*args)[1], Op::Maximum}, std::pair{(*args)[2], Op::Minimum}}) {
      if (!arg || !x.ok()) continue;
      Result bound = operand(arg);
      x = bound.ok() ? emit(op, {x.id, bound.id}, {}, e.range) : bound;
    }
    return x;
  }

  // concat's arguments: its tensors, positional, then axis= alone by keyword.
  bool bind_concat(const Expr& e, std::vector<const Expr*>& tensors, const Expr*& axis) {
    bool ok = true, seen_keyword = false;
    auto fail = [&](const SourceRange& at, const std::string& message) {
      error(at, "concat: " + message);
      ok = false;
    };
    for (size_t i = 0; i < e.args.size(); ++i) {
      const std::string& given = e.keywords[i];
      if (given.empty()) {
        if (seen_keyword) fail(e.args[i]->range, "positional argument after a keyword argument");
        else tensors.push_back(e.args[i].get());
        continue;
      }
      seen_keyword = true;
      if (given != "axis" && given != "dim") fail(e.keyword_ranges[i], "unknown argument '" + given + "'; concat takes tensors and axis=");
      else if (axis) fail(e.keyword_ranges[i], "argument 'axis' given twice");
      else axis = e.args[i].get();
    }
    return ok;
  }

  // The calls spelled as PyTorch spells them (op_signature.h, spelled_calls).
  Result call(const Expr& e) {
    if (e.name == "where") return where(e);
    if (e.name == "clamp") return clamp(e);
    if (e.name == "pow") {
      auto args = bind(e, {"input", "exponent"}, 2);
      if (!args) return {};
      Result x = operand((*args)[0]), y = operand((*args)[1]);
      return x.ok() && y.ok() ? power(x.id, y.id, e.range) : Result{};
    }
    auto op = op_from_name(e.name);
    if (!op) {
      std::vector<std::string> names = op_names();
      for (const SpelledCall& c : spelled_calls()) names.push_back(c.name);
      auto near = nearest_name(e.name, names);
      error(e.name_range, "unknown op '" + e.name + "'" + (near ? "; did you mean '" + *near + "'?" : ""));
      return {};
    }
    const std::string opn = *op == Op::Cast ? e.name : op_name(*op);  // a cast by its dtype: f16(x)
    // Concat binds its tensors itself (variadic) and only `axis` by keyword.
    const std::vector<ParamSpec> specs = *op == Op::Concat ? std::vector<ParamSpec>{} : op_params(*op);
    std::vector<const Expr*> tensors, bound;  // concat's operands; the other ops' parameters
    const Expr* concat_axis = nullptr;
    if (*op == Op::Concat) {
      if (!bind_concat(e, tensors, concat_axis)) return {};
    } else {
      std::vector<std::string> names;
      std::vector<bool> required;
      for (const ParamSpec& p : specs) {
        names.push_back(p.name);
        required.push_back(p.required);
      }
      auto args = bind(e, opn, names, required);
      if (!args) return {};
      bound = std::move(*args);
    }
    bool ok = true;

    Attrs attrs;
    if (*op == Op::Cast) attrs.dtype = parse_dtype(e.name);
    std::vector<int> operands;
    bool poisoned = false;
    auto tensor = [&](const Expr& arg) {
      Result r = single(eval(arg), arg.range);
      if (!r.ok()) poisoned = true;
      else operands.push_back(r.id);
    };
    if (*op == Op::Concat) {
      for (const Expr* t : tensors) tensor(*t);
      if (concat_axis) {
        if (auto a = small_int(*concat_axis, "concat: axis")) attrs.axis = *a;
        else ok = false;
      }
    }
    for (size_t i = 0; i < specs.size(); ++i) {
      if (!bound[i]) continue;
      const Expr& arg = *bound[i];
      const std::string what = opn + ": " + specs[i].name;
      switch (specs[i].kind) {
        case ArgKind::Tensor: tensor(arg); break;
        case ArgKind::Int: {
          auto v = small_int(arg, what);
          if (!v) ok = false;
          else if (specs[i].name == std::string("parts")) attrs.parts = *v;
          else attrs.axis = *v;
          break;
        }
        case ArgKind::Bool:
          if (arg.kind != Expr::Kind::Bool) {
            error(arg.range, what + " must be true or false");
            ok = false;
          } else {
            attrs.keepdims = arg.boolean;
          }
          break;
        case ArgKind::Number: {
          const Expr* n = &arg;
          double sign = 1;
          if (n->kind == Expr::Kind::Neg) {
            sign = -1;
            n = n->args[0].get();
          }
          if (n->kind != Expr::Kind::Number) {
            error(arg.range, what + " must be a number");
            ok = false;
          } else {
            attrs.eps = sign * n->number;
          }
          break;
        }
        case ArgKind::IntList:
          if (arg.kind != Expr::Kind::List) {
            error(arg.range, what + " must be a list of integers like [0, 2, 1]");
            ok = false;
            break;
          }
          for (const auto& item : arg.args) {
            auto v = small_int(*item, what + " entry");
            if (!v) ok = false;
            else attrs.perm.push_back(*v);
          }
          break;
        case ArgKind::DimList:
          if (arg.kind != Expr::Kind::List) {
            error(arg.range, what + " must be a list of dims like [n, d/2]");
            ok = false;
            break;
          }
          for (const auto& item : arg.args) {
            auto d = to_dim(*item, false);
            if (!d) ok = false;
            else attrs.shape.push_back(*d);
          }
          break;
      }
    }
    if (!ok || poisoned) return {};
    return emit(*op, std::move(operands), std::move(attrs), e.range);
  }

  const ProgramAst& ast_;
  std::string file_;
  Program prog_;
  Diagnostics diags_;
  std::map<std::string, Binding> scope_;
  std::set<std::string> taken_;
  std::map<std::string, int> next_number_;
};

}  // namespace

BuildResult build_program(const ProgramAst& ast, const std::string& file) { return Builder(ast, file).run(); }

}  // namespace prism
