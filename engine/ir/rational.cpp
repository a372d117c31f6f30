#include "engine/ir/rational.h"

#include <limits>

namespace prism {

namespace {
__int128 gcd128(__int128 a, __int128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b != 0) {
    __int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}
}  // namespace

Rational::Rational(int64_t num, int64_t den) { *this = make(num, den); }

Rational Rational::make(__int128 num, __int128 den) {
  if (den == 0) throw DimError("division by zero");
  if (den < 0) {
    num = -num;
    den = -den;
  }
  __int128 g = gcd128(num, den);
  if (g > 1) {
    num /= g;
    den /= g;
  }
  constexpr __int128 lo = std::numeric_limits<int64_t>::min() + 1;  // keep negation safe
  constexpr __int128 hi = std::numeric_limits<int64_t>::max();
  if (num < lo || num > hi || den > hi) throw DimError("dim arithmetic overflows 64 bits");
  Rational r;
  r.num_ = int64_t(num);
  r.den_ = int64_t(den);
  return r;
}

Rational Rational::operator+(const Rational& o) const {
  return make(__int128(num_) * o.den_ + __int128(o.num_) * den_, __int128(den_) * o.den_);
}
Rational Rational::operator-(const Rational& o) const {
  return make(__int128(num_) * o.den_ - __int128(o.num_) * den_, __int128(den_) * o.den_);
}
Rational Rational::operator*(const Rational& o) const {
  return make(__int128(num_) * o.num_, __int128(den_) * o.den_);
}
Rational Rational::operator/(const Rational& o) const {
  return make(__int128(num_) * o.den_, __int128(den_) * o.num_);
}
Rational Rational::operator-() const { return make(-__int128(num_), den_); }
bool Rational::operator<(const Rational& o) const {
  return __int128(num_) * o.den_ < __int128(o.num_) * den_;
}

std::string Rational::str() const {
  return den_ == 1 ? std::to_string(num_) : std::to_string(num_) + "/" + std::to_string(den_);
}

}  // namespace prism
