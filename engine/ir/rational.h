// Exact rationals over int64 for symbolic dim coefficients. Every operation checks for overflow and
// throws DimError rather than wrapping, so hostile program text cannot produce garbage sizes.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace prism {

class DimError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Rational {
 public:
  Rational() = default;
  Rational(int64_t n) : num_(n) {}  // NOLINT: integers convert implicitly
  Rational(int64_t num, int64_t den);

  int64_t num() const { return num_; }
  int64_t den() const { return den_; }
  bool is_integer() const { return den_ == 1; }
  bool is_zero() const { return num_ == 0; }
  double to_double() const { return double(num_) / double(den_); }

  Rational operator+(const Rational& o) const;
  Rational operator-(const Rational& o) const;
  Rational operator*(const Rational& o) const;
  Rational operator/(const Rational& o) const;
  Rational operator-() const;
  bool operator==(const Rational&) const = default;
  bool operator<(const Rational& o) const;

  std::string str() const;  // "3" or "3/4"

 private:
  static Rational make(__int128 num, __int128 den);
  int64_t num_ = 0;
  int64_t den_ = 1;  // always > 0, gcd(num, den) == 1
};

}  // namespace prism
