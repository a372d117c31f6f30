// Decimal literals are exact rationals (engine/ir/decimal.h), and print as they were written.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "engine/ir/decimal.h"
#include "engine/ir/print.h"
#include "engine/lang/compile.h"

using namespace prism;

TEST_CASE("decimal: literals read as exact rationals when numerator and denominator stay below 2^53", "[ir][decimal]") {
  CHECK(exact_decimal("0.1") == Rational(1, 10));
  CHECK(exact_decimal("0.10") == Rational(1, 10));
  CHECK(exact_decimal("1e-6") == Rational(1, 1000000));
  CHECK(exact_decimal("1E-06") == Rational(1, 1000000));
  CHECK(exact_decimal("2.5e3") == Rational(2500));
  CHECK(exact_decimal("2.5e+3") == Rational(2500));
  CHECK(exact_decimal("0.044715") == Rational(44715, 1000000));
  CHECK(exact_decimal(".5") == Rational(1, 2));
  CHECK(exact_decimal("3.") == Rational(3));
  CHECK(exact_decimal("0.000") == Rational(0));
  // Too many digits or too far from 1 to be exact as a double quotient; not decimals at all.
  CHECK_FALSE(exact_decimal("0.1234567890123456"));
  CHECK_FALSE(exact_decimal("1e-20"));
  CHECK_FALSE(exact_decimal("1e300"));
  CHECK_FALSE(exact_decimal("0x10"));
  CHECK_FALSE(exact_decimal("1e"));
  CHECK_FALSE(exact_decimal(""));
  CHECK_FALSE(exact_decimal("."));
  CHECK_FALSE(exact_decimal("1.2.3"));
  // Each exact literal's value as a double is the double the literal reads as.
  for (const char* text : {"0.1", "0.7978845608", "1e-6", "0.044715", "123456789.012345", "3.14159265358979"})
    CHECK(exact_decimal(text)->to_double() == std::strtod(text, nullptr));
}

TEST_CASE("decimal: exact constants print as the shortest decimal that reads back as them", "[ir][decimal]") {
  CHECK(decimal_text(Rational(1, 10)) == "0.1");
  CHECK(decimal_text(Rational(1, 1000000)) == "1e-06");
  CHECK(decimal_text(Rational(-5, 2)) == "-2.5");
  CHECK_FALSE(decimal_text(Rational(1, 3)));
  CHECK(constant_str(Constant{Dim::constant(Rational(1, 100)), 0}) == "0.01");
  CHECK(constant_str(Constant{Dim::constant(Rational(-1, 8)), 0}) == "(-0.125)");
  CHECK(constant_str(Constant{Dim::constant(Rational(1, 3)), 0}) == "(1/3)");
  // A program's literals: exact, printed as written, folded exactly (0.1 * 0.1 is 0.01).
  CompileResult r = compile_text("program p(X: f32[n]) {\n  return X * (0.1 * 0.1) + X * 1e-6 + X * 0.1234567890123456\n}\n", "p.prism");
  REQUIRE(r.programs.size() == 1);
  const std::string text = print_program(r.programs.at(0));
  CHECK_THAT(text, Catch::Contains("X * 0.01") && Catch::Contains("X * 1e-06") && Catch::Contains("X * 0.1234567890123456"));
}

TEST_CASE("decimal: a chain of decimals too long for 64-bit rationals folds in floating point, not into an error", "[ir][decimal]") {
  CompileResult r = compile_text("program p(X: f32[n]) {\n  return X * (0.7978845608 * 0.044715 * 0.3183098861 * 0.000123457)\n}\n", "p.prism");
  INFO((r.diagnostics.empty() ? std::string() : r.diagnostics.front().message));
  CHECK(r.diagnostics.empty());
  CHECK(r.programs.size() == 1);
}

TEST_CASE("decimal: a number that comes as a double is exact when its shortest decimal is", "[ir][decimal]") {
  CHECK(decimal_constant(1e-6).exact == Dim::constant(Rational(1, 1000000)));
  CHECK(decimal_constant(-0.25).exact == Dim::constant(Rational(-1, 4)));
  CHECK_FALSE(decimal_constant(1.0 / 3).exact);
  CHECK(decimal_constant(1.0 / 3).number == 1.0 / 3);
}
