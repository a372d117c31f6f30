// Decimal literals as exact rationals. A program's `0.1` means one tenth: the e-graph folds it
// exactly (`x * 0.1 * 0.1` meets `x * 0.01`, `x / 10` meets `x * 0.1`) and the finite-field
// fingerprint maps it to 1/10, where the double nearest to it would be a different dyadic
// rational. Only literals whose numerator and denominator stay below 2^53 are exact: their value
// as a double (numerator / denominator, one correctly rounded division) is then exactly the
// double the literal reads as, so code and interpreter see the number the user wrote.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "engine/ir/program.h"
#include "engine/ir/rational.h"

namespace prism {

// "0.1" -> 1/10, "1e-6" -> 1/1000000, "2.5e3" -> 2500; nullopt for text that is not a plain
// decimal (digits, an optional fraction, an optional exponent) or too long to be exact as above.
std::optional<Rational> exact_decimal(std::string_view text);

// A constant of value x: exact as the shortest decimal of x reads (1e-06 is 1/1000000) when that is
// exact and its double is x, else the float x. For numbers that come as doubles (rms_norm's eps),
// so that they meet the same number written as a literal.
Constant decimal_constant(double x);

// The shortest text of r's double when exact_decimal reads it back as r ("0.1", "1e-06"), else
// nullopt (1/3; a product of literals with a denominator past 2^53).
std::optional<std::string> decimal_text(const Rational& r);

}  // namespace prism
