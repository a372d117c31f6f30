// Symbolic dimensions: expressions over dim names and integers with + - * /, kept in a canonical
// form so that equal expressions compare equal (d/F*F == d, 2*d/2 == d, n*d == d*n).
//
// The canonical form is a polynomial with rational coefficients whose monomials are products of
// atoms raised to integer (possibly negative) exponents. An atom is a dim name, or an opaque sum:
// dividing by a sum of several terms (d/(n+1)) keeps that sum as one atom. Equality compares the
// canonical terms only; each Dim also remembers the order its names were first seen in, so
// printing reproduces the user's spelling (n*d stays "n*d", d*n stays "d*n").
//
// Division by a sum that may be zero at some binding (d-7, n-d) is remembered even where it
// cancels: (d-7)/(d-7) is 1 in the canonical form, but evaluating it at d = 7 throws, as the
// division it was written as would (docs/design.md, "Numerics"). A sum of dims with positive
// coefficients (d+1) cannot be zero, since dims are positive, and is not remembered.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/rational.h"

namespace prism {

using DimBindings = std::map<std::string, int64_t>;

class Dim {
 public:
  Dim() = default;                 // 0
  Dim(int64_t value);              // NOLINT: integers convert implicitly
  static Dim constant(Rational value);
  static Dim symbol(const std::string& name);

  // Arithmetic; throws DimError on division by zero, overflow, or runaway size.
  Dim operator+(const Dim& o) const;
  Dim operator-(const Dim& o) const;
  Dim operator*(const Dim& o) const;
  Dim operator/(const Dim& o) const;
  Dim operator-() const;

  bool operator==(const Dim& o) const { return terms_ == o.terms_; }
  bool operator!=(const Dim& o) const { return !(*this == o); }

  bool is_constant() const;
  std::optional<Rational> constant_value() const;
  std::optional<int64_t> as_integer() const;  // when constant and integral
  // The name when this is exactly one dim name (coefficient 1, exponent 1).
  std::optional<std::string> as_symbol() const;
  // Dim names this expression mentions (inside opaque sums too), in display order.
  std::vector<std::string> symbols() const;
  // True when no binding of positive dims makes this zero: a nonzero constant, a product of dims
  // and such sums, or a sum of such terms with positive coefficients.
  bool provably_nonzero() const;
  // The divisors that may be zero at some binding, as written (kept through cancellation).
  std::vector<Dim> zero_divisors() const;

  // In the language, e.g. "d/2", "n*d", "2*d+1", "d/(n+1)".
  std::string str() const;
  // Order-independent text of the canonical form; equal Dims have equal keys.
  std::string canonical() const;

  // Exact value under bindings; throws DimError naming an unbound dim, or a divisor that is zero
  // at them (even one that cancelled).
  Rational evaluate(const DimBindings& bindings) const;
  // A size: must evaluate to a positive integer, else DimError naming the expression and bindings.
  int64_t evaluate_size(const DimBindings& bindings) const;
  // This expression with each dim of `values` replaced by its expression (inside opaque sums too),
  // rebuilt by this class's arithmetic in the order it is written, so that it prints as the same
  // text with the replacements written in would parse to. Throws DimError as the arithmetic does.
  Dim substituted(const std::map<std::string, Dim>& values) const;

 private:
  using Monomial = std::vector<std::pair<std::string, int>>;  // (atom key, exponent), sorted by key
  Dim as_atom() const;  // this sum as one opaque atom (exponent 1)
  static Monomial multiply(const Monomial& a, const Monomial& b);
  void add_term(const Monomial& m, const Rational& c);
  void merge_atoms_from(const Dim& o);
  void prune_atoms();
  std::string print(bool canonical_order) const;
  std::vector<std::pair<Monomial, Rational>> print_order() const;  // the terms as str() writes them
  std::string print_term(const Monomial& m, const Rational& c, bool canonical_order) const;
  std::string atom_text(const std::string& key, bool canonical_order) const;

  std::map<Monomial, Rational> terms_;                       // no zero coefficients
  std::map<std::string, std::shared_ptr<const Dim>> sums_;   // opaque atom key -> its sum
  std::vector<std::string> order_;                           // atom keys in display order
  // Divisors that may be zero (not provably_nonzero), by canonical text; not part of equality.
  std::map<std::string, std::shared_ptr<const Dim>> zero_divisors_;
};

// "[n, d/2]"
std::string shape_str(const std::vector<Dim>& shape);

}  // namespace prism
