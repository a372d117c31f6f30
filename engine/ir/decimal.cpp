#include "engine/ir/decimal.h"

#include <charconv>
#include <cstdint>
#include <utility>

namespace prism {

namespace {

constexpr int64_t kExactLimit = int64_t(1) << 53;

}  // namespace

std::optional<Rational> exact_decimal(std::string_view text) {
  size_t i = 0;
  int64_t digits = 0;  // the significand, all digits of integer and fraction parts
  int scale = 0;       // value = digits * 10^scale
  int count = 0;       // significant digits so far
  bool any = false, fraction = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !fraction) {
      fraction = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    any = true;
    if (digits == 0 && c == '0') {  // leading zeros add no precision
      if (fraction) --scale;
      continue;
    }
    if (++count > 15) return std::nullopt;
    digits = digits * 10 + (c - '0');
    if (fraction) --scale;
  }
  if (!any) return std::nullopt;
  if (i < text.size()) {
    if (text[i] != 'e' && text[i] != 'E') return std::nullopt;
    int exponent = 0;
    const char* begin = text.data() + i + 1;
    if (begin < text.data() + text.size() && *begin == '+') ++begin;
    auto [end, ec] = std::from_chars(begin, text.data() + text.size(), exponent);
    if (ec != std::errc() || end != text.data() + text.size() || exponent > 400 || exponent < -400) return std::nullopt;
    scale += exponent;
  }
  if (digits == 0) return Rational(0);
  int64_t num = digits, den = 1;
  for (; scale > 0; --scale) {
    if (num >= kExactLimit / 10) return std::nullopt;
    num *= 10;
  }
  for (; scale < 0; ++scale) {
    if (den >= kExactLimit / 10) return std::nullopt;
    den *= 10;
  }
  return Rational(num, den);
}

namespace {

// The shortest text that reads back as x ("0.1", "-1e-06"), and the exact rational it reads as
// (signed), when exact_decimal takes it.
std::pair<std::string, std::optional<Rational>> shortest(double x) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, x);
  std::string s(buf, res.ptr);
  const bool negative = !s.empty() && s[0] == '-';
  std::optional<Rational> r = exact_decimal(negative ? std::string_view(s).substr(1) : std::string_view(s));
  if (r && negative) r = -*r;
  return {std::move(s), r};
}

}  // namespace

Constant decimal_constant(double x) {
  const auto [text, r] = shortest(x);
  if (r && r->to_double() == x) return Constant{Dim::constant(*r), x};
  return Constant{std::nullopt, x};
}

std::optional<std::string> decimal_text(const Rational& r) {
  auto [text, back] = shortest(r.to_double());
  if (!back || *back != r) return std::nullopt;
  return text;
}

}  // namespace prism
