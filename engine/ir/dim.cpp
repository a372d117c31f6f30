#include "engine/ir/parenthesized.h"
#include "engine/ir/dim.h"

#include <algorithm>
#include <cstdlib>
#include <set>

namespace prism {

namespace {
// Caps that keep hostile expressions ((a+b)*(a+b)*... or d*d*d*...) bounded.
constexpr size_t kMaxTerms = 256;
constexpr int kMaxExponent = 64;

}  // namespace

Dim::Dim(int64_t value) {
  if (value != 0) terms_[{}] = Rational(value);
}

Dim Dim::constant(Rational value) {
  Dim d;
  if (!value.is_zero()) d.terms_[{}] = value;
  return d;
}

Dim Dim::symbol(const std::string& name) {
  Dim d;
  d.terms_[{{name, 1}}] = Rational(1);
  d.order_.push_back(name);
  return d;
}

Dim::Monomial Dim::multiply(const Monomial& a, const Monomial& b) {
  Monomial out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
      out.push_back(a[i++]);
    } else if (i == a.size() || b[j].first < a[i].first) {
      out.push_back(b[j++]);
    } else {
      int e = a[i].second + b[j].second;
      if (std::abs(e) > kMaxExponent) throw DimError("dim expression too complex (exponent too large)");
      if (e != 0) out.emplace_back(a[i].first, e);
      ++i;
      ++j;
    }
  }
  return out;
}

void Dim::add_term(const Monomial& m, const Rational& c) {
  auto it = terms_.find(m);
  if (it == terms_.end()) {
    if (c.is_zero()) return;
    if (terms_.size() >= kMaxTerms) throw DimError("dim expression too complex (too many terms)");
    terms_.emplace(m, c);
    return;
  }
  it->second = it->second + c;
  if (it->second.is_zero()) terms_.erase(it);
}

void Dim::merge_atoms_from(const Dim& o) {
  for (const auto& [k, d] : o.zero_divisors_) zero_divisors_.emplace(k, d);
  for (const auto& k : o.order_)
    if (std::find(order_.begin(), order_.end(), k) == order_.end()) order_.push_back(k);
  for (const auto& [k, s] : o.sums_) sums_.emplace(k, s);
}

// Drops atoms that cancelled out of every term.
void Dim::prune_atoms() {
  std::set<std::string> used;
  for (const auto& [m, c] : terms_)
    for (const auto& [k, e] : m) used.insert(k);
  std::erase_if(order_, [&](const std::string& k) { return !used.count(k); });
  std::erase_if(sums_, [&](const auto& kv) { return !used.count(kv.first); });
}

Dim Dim::operator+(const Dim& o) const {
  Dim r = *this;
  r.merge_atoms_from(o);
  for (const auto& [m, c] : o.terms_) r.add_term(m, c);
  r.prune_atoms();
  return r;
}

Dim Dim::operator-() const {
  Dim r = *this;
  for (auto& [m, c] : r.terms_) c = -c;
  return r;
}

Dim Dim::operator-(const Dim& o) const { return *this + (-o); }

Dim Dim::operator*(const Dim& o) const {
  // Multiplying by a sum that this expression divides by cancels the opaque atom instead of
  // expanding: d/(n+1)*(n+1) == d.
  if (o.terms_.size() > 1 && sums_.count(parenthesized(o.canonical()))) return *this * o.as_atom();
  if (terms_.size() > 1 && o.sums_.count(parenthesized(canonical()))) return o * as_atom();
  Dim r;
  r.order_ = order_;
  r.sums_ = sums_;
  r.zero_divisors_ = zero_divisors_;
  r.merge_atoms_from(o);
  for (const auto& [ma, ca] : terms_)
    for (const auto& [mb, cb] : o.terms_) r.add_term(multiply(ma, mb), ca * cb);
  r.prune_atoms();
  return r;
}

Dim Dim::operator/(const Dim& o) const {
  if (o.terms_.empty()) throw DimError("division by zero in dim expression");
  Dim inverse;
  if (o.terms_.size() == 1) {
    // A single term inverts exactly: (c * a^i * b^j)^-1 = (1/c) * a^-i * b^-j.
    const auto& [m, c] = *o.terms_.begin();
    Monomial inv = m;
    for (auto& [k, e] : inv) e = -e;
    inverse.terms_[inv] = Rational(1) / c;
    inverse.order_ = o.order_;
    inverse.sums_ = o.sums_;
  } else {
    // A sum has no polynomial inverse: it becomes one opaque atom with exponent -1.
    inverse = o.as_atom();
    inverse.terms_ = {{{{inverse.order_[0], -1}}, Rational(1)}};
  }
  inverse.zero_divisors_ = o.zero_divisors_;
  if (!o.provably_nonzero()) {
    Dim divisor = o;
    divisor.zero_divisors_.clear();
    inverse.zero_divisors_.emplace(divisor.canonical(), std::make_shared<const Dim>(std::move(divisor)));
  }
  return *this * inverse;
}

Dim Dim::as_atom() const {
  std::string key = parenthesized(canonical());
  Dim atom;
  atom.terms_[{{key, 1}}] = Rational(1);
  atom.order_.push_back(key);
  atom.sums_[key] = std::make_shared<const Dim>(*this);
  return atom;
}

bool Dim::is_constant() const { return terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty()); }

std::optional<Rational> Dim::constant_value() const {
  if (terms_.empty()) return Rational(0);
  if (!is_constant()) return std::nullopt;
  return terms_.begin()->second;
}

std::optional<int64_t> Dim::as_integer() const {
  auto c = constant_value();
  if (!c || !c->is_integer()) return std::nullopt;
  return c->num();
}

std::optional<std::string> Dim::as_symbol() const {
  if (terms_.size() != 1) return std::nullopt;
  const auto& [m, c] = *terms_.begin();
  if (c != Rational(1) || m.size() != 1 || m[0].second != 1 || sums_.count(m[0].first)) return std::nullopt;
  return m[0].first;
}

std::vector<std::string> Dim::symbols() const {
  std::vector<std::string> out;
  for (const auto& k : order_) {
    auto s = sums_.find(k);
    std::vector<std::string> names = s == sums_.end() ? std::vector<std::string>{k} : s->second->symbols();
    for (auto& n : names)
      if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::string Dim::atom_text(const std::string& key, bool canonical_order) const {
  auto s = sums_.find(key);
  if (s == sums_.end()) return key;
  return parenthesized(s->second->print(canonical_order));
}

std::string Dim::print_term(const Monomial& m, const Rational& c, bool canonical_order) const {
  std::vector<std::pair<std::string, int>> atoms(m.begin(), m.end());
  if (!canonical_order) {
    auto rank = [&](const std::string& k) { return std::find(order_.begin(), order_.end(), k) - order_.begin(); };
    std::stable_sort(atoms.begin(), atoms.end(), [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
  }
  std::vector<std::string> num, den;
  int64_t cn = c.num() < 0 ? -c.num() : c.num();
  bool has_positive = std::any_of(atoms.begin(), atoms.end(), [](const auto& a) { return a.second > 0; });
  if (cn != 1 || !has_positive) num.push_back(std::to_string(cn));
  if (c.den() != 1) den.push_back(std::to_string(c.den()));
  for (const auto& [k, e] : atoms)
    for (int i = 0; i < std::abs(e); ++i) (e > 0 ? num : den).push_back(atom_text(k, canonical_order));
  std::string out;
  for (size_t i = 0; i < num.size(); ++i) out += (i ? "*" : "") + num[i];
  for (const auto& d : den) out += "/" + d;
  return out;
}

// Higher degree first, then by the order names were written: "2*d+1", "n*d+n".
std::vector<std::pair<Dim::Monomial, Rational>> Dim::print_order() const {
  std::vector<std::pair<Monomial, Rational>> terms(terms_.begin(), terms_.end());
  auto degree = [](const Monomial& m) {
    int d = 0;
    for (const auto& [k, e] : m) d += e;
    return d;
  };
  auto ranks = [&](const Monomial& m) {
    std::vector<std::pair<long, int>> r;
    for (const auto& [k, e] : m) r.emplace_back(std::find(order_.begin(), order_.end(), k) - order_.begin(), -e);
    std::sort(r.begin(), r.end());
    return r;
  };
  std::stable_sort(terms.begin(), terms.end(), [&](const auto& a, const auto& b) {
    int da = degree(a.first), db = degree(b.first);
    if (da != db) return da > db;
    return ranks(a.first) < ranks(b.first);
  });
  return terms;
}

std::string Dim::print(bool canonical_order) const {
  if (terms_.empty()) return "0";
  const std::vector<std::pair<Monomial, Rational>> terms =
      canonical_order ? std::vector<std::pair<Monomial, Rational>>(terms_.begin(), terms_.end()) : print_order();
  std::string out;
  for (size_t i = 0; i < terms.size(); ++i) {
    bool negative = terms[i].second.num() < 0;
    if (negative) out += "-";
    else if (i) out += "+";
    out += print_term(terms[i].first, terms[i].second, canonical_order);
  }
  return out;
}

std::string Dim::str() const { return print(false); }
std::string Dim::canonical() const { return print(true); }

bool Dim::provably_nonzero() const {
  if (terms_.empty()) return false;
  if (terms_.size() == 1) {
    // c * a^i * b^j: nonzero when every opaque atom is.
    for (const auto& [k, e] : terms_.begin()->first)
      if (auto s = sums_.find(k); s != sums_.end() && !s->second->provably_nonzero()) return false;
    return true;
  }
  // A sum: positive when every term is a positive coefficient times positive atoms.
  for (const auto& [m, c] : terms_) {
    if (c.num() <= 0) return false;
    for (const auto& [k, e] : m) {
      auto s = sums_.find(k);
      if (s != sums_.end() && !(s->second->terms_.size() > 1 && s->second->provably_nonzero())) return false;
    }
  }
  return true;
}

std::vector<Dim> Dim::zero_divisors() const {
  std::vector<Dim> out;
  for (const auto& [k, d] : zero_divisors_) out.push_back(*d);
  return out;
}

Dim Dim::substituted(const std::map<std::string, Dim>& values) const {
  std::map<std::string, Dim> atoms;  // each atom's replacement, in the order written
  for (const std::string& k : order_) {
    if (auto s = sums_.find(k); s != sums_.end()) atoms.emplace(k, s->second->substituted(values));
    else if (auto v = values.find(k); v != values.end()) atoms.emplace(k, v->second);
    else atoms.emplace(k, Dim::symbol(k));
  }
  Dim total(0);
  for (const auto& [m, c] : print_order()) {
    Dim term = Dim::constant(c);
    for (const std::string& k : order_) {
      auto e = std::find_if(m.begin(), m.end(), [&](const auto& a) { return a.first == k; });
      if (e == m.end()) continue;
      for (int i = 0; i < std::abs(e->second); ++i) term = e->second > 0 ? term * atoms.at(k) : term / atoms.at(k);
    }
    total = total + term;
  }
  return total;
}

Rational Dim::evaluate(const DimBindings& bindings) const {
  for (const auto& [k, d] : zero_divisors_) {
    if (!d->evaluate(bindings).is_zero()) continue;
    std::string where;
    for (const auto& s : d->symbols())
      if (auto b = bindings.find(s); b != bindings.end()) where += (where.empty() ? "" : ", ") + s + "=" + std::to_string(b->second);
    throw DimError("divides by " + d->str() + ", which is 0 at " + where + " (in " + str() + ", as folded)");
  }
  Rational total(0);
  for (const auto& [m, c] : terms_) {
    Rational t = c;
    for (const auto& [k, e] : m) {
      Rational base;
      auto s = sums_.find(k);
      if (s != sums_.end()) {
        base = s->second->evaluate(bindings);
      } else {
        auto b = bindings.find(k);
        if (b == bindings.end()) throw DimError("unbound dim '" + k + "' in " + str());
        base = Rational(b->second);
      }
      if (base.is_zero() && e < 0) throw DimError("division by zero evaluating " + str());
      for (int i = 0; i < std::abs(e); ++i) t = e > 0 ? t * base : t / base;
    }
    total = total + t;
  }
  return total;
}

int64_t Dim::evaluate_size(const DimBindings& bindings) const {
  Rational v;
  try {
    v = evaluate(bindings);
  } catch (const DimError& e) {
    std::string what = e.what();
    if (what.rfind("unbound dim", 0) == 0) throw;
    throw DimError("dim " + str() + " cannot be evaluated: " + what);
  }
  if (v.is_integer() && v.num() > 0) return v.num();
  std::string where;
  for (const auto& s : symbols()) {
    auto b = bindings.find(s);
    if (b != bindings.end()) where += (where.empty() ? "" : ", ") + s + "=" + std::to_string(b->second);
  }
  throw DimError("dim " + str() + " is not a positive integer" + (where.empty() ? "" : " for " + where) + " (it is " +
                 v.str() + ")");
}

std::string shape_str(const std::vector<Dim>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out.append(i ? ", " : "").append(shape[i].str());
  return out + "]";
}

}  // namespace prism
