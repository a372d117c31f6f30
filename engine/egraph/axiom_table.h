// The axiom table's own parts (axioms.cpp and its families, axioms_*.cpp): the table the rules go
// into, and what their guards ask of the e-class analysis. Each family of rules is a function of
// its own, called in a fixed order (rule order is part of saturation's behaviour).
#pragma once
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/egraph/rewrite.h"
#include "engine/egraph/tensor_lang.h"

namespace prism::eg::axiom {

// The layout rules hold for every elementwise op and every reduction, whatever it computes.
inline const std::vector<TOp> kUnary = term_ops(OpClass::Unary);
inline const std::vector<TOp> kBinary = term_ops(OpClass::Binary);
inline const std::vector<TOp> kReduce = term_ops(OpClass::Reduce);

inline std::string s(TOp op) { return top_name(op); }
// A unary op as it heads a pattern: a cast carries the dtype it rounds to in its payload, bound
// as $t so a rule that moves the cast keeps it (f16 and bf16 are different roundings).
inline std::string head(TOp u) { return s(u) + (u == TOp::Cast ? "$t" : ""); }

// What guards and right-hand sides ask of a term's e-class analysis; copied into each rule's
// closures (the TensorGraph outlives its rules).
struct Shapes {
  TensorGraph* tg;
  size_t rank(Id id) const { return tg->rank(id); }
  bool one(Id id, int axis) const { return tg->dim_at(id, axis) == tg->one(); }
  bool same_rank(Id a, Id b) const { return rank(a) == rank(b) && rank(a) > 0; }
  // Both operands of a binary op line up: equal rank, or one is a scalar (it broadcasts).
  bool aligned(Id a, Id b) const { return rank(a) == rank(b) || rank(a) == 0 || rank(b) == 0; }
  // Layout op `op`@axis applied to an operand of a binary op: scalars broadcast and stay as they are.
  Id lift(TOp op, int axis, Id x) const { return tg->rank(x) == 0 ? x : tg->op(op, {x}, axis); }
  // An exact constant's value (integers, rationals, dims); a float constant is none.
  std::optional<Dim> exact(Id id) const {
    const Constant* c = tg->constant_of(id);
    return c && c->exact ? c->exact : std::nullopt;
  }
  // A constant written as a division by a dim that may be zero ((d-7)/(d-7)) is no 0 or 1: it is
  // undefined at d = 7 (dim.h).
  bool is_value(Id id, int64_t v) const {
    const std::optional<Dim> d = exact(id);
    return d && *d == Dim(v) && d->zero_divisors().empty();
  }
};

struct Table {
  TensorGraph& tg;
  std::vector<Rewrite> rules;
  bool lifting = false;  // the rules being added lift a grid outward (Rewrite::lifts_grid)

  void rule(const std::string& name, const std::string& lhs, const std::string& rhs, Rewrite::Guard guard = {}) {
    rules.push_back(Rewrite::make(name, lhs, rhs, resolve_top, std::move(guard)));
    rules.back().lifts_grid = lifting;
  }
  Rewrite& named(const std::string& name) {
    auto it = std::find_if(rules.begin(), rules.end(), [&](const Rewrite& r) { return r.name == name; });
    if (it == rules.end()) throw std::logic_error("axioms: no rule '" + name + "' to mark");
    return *it;
  }
  // Marks the named rules exact only over the reals (Rewrite::reals_only); every name must exist.
  void reals_only(const std::vector<std::string>& names) {
    for (const std::string& name : names) named(name).reals_only = true;
  }
  // Marks the named rules as ones a grid's lifting needs (Rewrite::lifts_grid).
  void lifts_grid(const std::vector<std::string>& names) {
    for (const std::string& name : names) named(name).lifts_grid = true;
  }
  // The pair of rules that move a layout or grid op past a binary op whose other operand is a
  // scalar (rank 0): `(op (L x) c)` = `(L (op x c))` and `(op c (L x))` = `(L (op c x))`, named
  // op-NAME-scalar and op-scalar-NAME.
  void past_scalar(const std::string& op, const std::string& layout, const std::string& name) {
    const Shapes sh{&tg};
    rule(op + "-" + name + "-scalar", "(" + op + " (" + layout + " ?x) ?c)", "(" + layout + " (" + op + " ?x ?c))",
         [sh](const EGraph&, const Subst& m) { return sh.rank(m.var[1]) == 0; });
    rule(op + "-scalar-" + name, "(" + op + " ?c (" + layout + " ?x))", "(" + layout + " (" + op + " ?c ?x))",
         [sh](const EGraph&, const Subst& m) { return sh.rank(m.var[0]) == 0; });
  }
  // A rule whose right-hand side is computed (new axes, a choice of factors).
  void computed(const std::string& name, const std::string& lhs, const std::string& rhs_doc, Rewrite::Guard guard,
                std::function<void(const Pattern&, EGraph&, const Subst&, std::vector<Id>&)> apply) {
    Rewrite r;
    r.name = name;
    r.lhs = Pattern(lhs, resolve_top);
    r.guard = std::move(guard);
    auto lhs_copy = std::make_shared<Pattern>(r.lhs);
    r.apply = [lhs_copy, apply](EGraph& g, const Subst& sub, std::vector<Id>& out) { apply(*lhs_copy, g, sub, out); };
    r.rhs = rhs_doc;
    r.lifts_grid = lifting;
    rules.push_back(std::move(r));
  }
};



// The families, in the order tensor_axioms adds them.
void arithmetic(Table& t);    // axioms_arithmetic.cpp: arithmetic, exact constants, casts
void layout(Table& t);        // axioms_layout.cpp: unsqueeze and squeeze, matmul as a contraction
void reductions(Table& t);    // axioms_reductions.cpp: sums and maxes, splits
void grid(Table& t);          // axioms_grid.cpp: partition, replicate, combine; lifting a grid outward

}  // namespace prism::eg::axiom
