#include <catch2/catch.hpp>

#include "engine/ir/dim.h"

using namespace prism;

namespace {
Dim s(const char* n) { return Dim::symbol(n); }
}  // namespace

TEST_CASE("dims simplify to a canonical form", "[engine][dim]") {
  Dim d = s("d"), n = s("n"), F = s("F");
  CHECK(d / F * F == d);
  CHECK(Dim(2) * d / Dim(2) == d);
  CHECK(n * d == d * n);
  CHECK(d + d == Dim(2) * d);
  CHECK(d - d == Dim(0));
  CHECK((n + Dim(1)) * Dim(2) == Dim(2) * n + Dim(2));
  CHECK(d / Dim(2) + d / Dim(2) == d);
  CHECK(d / (n + Dim(1)) * (n + Dim(1)) == d);
  CHECK(d / (n + Dim(1)) == d / (Dim(1) + n));
  CHECK(d / Dim(2) != d);
  CHECK((d * n).canonical() == (n * d).canonical());
}

TEST_CASE("dims print back in the language", "[engine][dim]") {
  Dim d = s("d"), n = s("n"), F = s("F");
  CHECK((d / Dim(2)).str() == "d/2");
  CHECK((n * d).str() == "n*d");
  CHECK((d * n).str() == "d*n");
  CHECK((Dim(2) * d + Dim(1)).str() == "2*d+1");
  CHECK((Dim(1) + Dim(2) * d).str() == "2*d+1");
  CHECK((n - Dim(1)).str() == "n-1");
  CHECK((Dim(3) * d / Dim(2)).str() == "3*d/2");
  CHECK((d / F).str() == "d/F");
  CHECK((Dim(1) / F).str() == "1/F");
  CHECK((d / (n + Dim(1))).str() == "d/(n+1)");
  CHECK((-d).str() == "-d");
  CHECK(Dim(0).str() == "0");
  CHECK(Dim(7).str() == "7");
  CHECK((d * d).str() == "d*d");
}

TEST_CASE("dims evaluate under bindings", "[engine][dim]") {
  Dim d = s("d"), n = s("n");
  DimBindings b{{"d", 4096}, {"n", 16}};
  CHECK((n * d).evaluate_size(b) == 65536);
  CHECK((d / Dim(2)).evaluate_size(b) == 2048);
  CHECK((d / (n + Dim(1))).evaluate(b) == Rational(4096, 17));
  try {
    (d / Dim(3)).evaluate_size(b);
    FAIL("expected an error");
  } catch (const DimError& e) {
    CHECK(std::string(e.what()) == "dim d/3 is not a positive integer for d=4096 (it is 4096/3)");
  }
  try {
    (d * s("q")).evaluate_size(b);
    FAIL("expected an error");
  } catch (const DimError& e) {
    CHECK(std::string(e.what()).find("unbound dim 'q'") != std::string::npos);
  }
  CHECK_THROWS_AS((d - d - Dim(1)).evaluate_size(b), DimError);
  CHECK_THROWS_AS(d / Dim(0), DimError);
}

TEST_CASE("dim arithmetic refuses to overflow or explode", "[engine][dim]") {
  Dim big(int64_t(1) << 62);
  CHECK_THROWS_AS(big * big, DimError);
  Dim x = s("a") + s("b") + s("c") + s("e");
  Dim p(1);
  CHECK_THROWS_AS(
      [&] {
        for (int i = 0; i < 40; ++i) p = p * x;
      }(),
      DimError);
  CHECK(Rational(6, -4) == Rational(-3, 2));
  CHECK(Rational(-3, 2).str() == "-3/2");
}

TEST_CASE("dims list their symbols in display order", "[engine][dim]") {
  Dim e = s("n") * s("d") + s("d") / (s("k") + Dim(1));
  CHECK(e.symbols() == std::vector<std::string>{"n", "d", "k"});
  CHECK(s("n").as_symbol() == std::string("n"));
  CHECK(!(Dim(2) * s("n")).as_symbol());
  CHECK(Dim(4).as_integer() == 4);
  CHECK(!(Dim(4) / Dim(3)).as_integer());
}

TEST_CASE("a division by a dim that may be zero is remembered through cancellation", "[engine][dim]") {
  const Dim d = s("d"), n = s("n");
  const Dim one = (d - Dim(7)) / (d - Dim(7));
  CHECK(one == Dim(1));  // the canonical form cancels ...
  CHECK(one.evaluate({{"d", 8}}) == Rational(1));
  try {  // ... but at d = 7 it is the division it was written as
    (void)one.evaluate({{"d", 7}});
    FAIL("expected an error");
  } catch (const DimError& e) {
    CHECK(std::string(e.what()).find("divides by d-7, which is 0 at d=7") != std::string::npos);
  }
  CHECK_THROWS_AS((n / (n - d) * (n - d)).evaluate_size({{"n", 4}, {"d", 4}}), DimError);
  // Positive divisors are not remembered: dims are positive.
  CHECK((d / (n + Dim(1)) * (n + Dim(1))).zero_divisors().empty());
  CHECK((d / n).zero_divisors().empty());
  CHECK(s("n").provably_nonzero());
  CHECK((n + d).provably_nonzero());
  CHECK((Dim(3) * n * d).provably_nonzero());
  CHECK(!(n - d).provably_nonzero());
  CHECK(!(d - Dim(7)).provably_nonzero());
  CHECK(!Dim(0).provably_nonzero());
  CHECK((d / (d - Dim(7))).zero_divisors().size() == 1);
}

TEST_CASE("dims substitute expressions for dims, written as they were", "[engine][dim]") {
  Dim d = s("d"), n = s("n"), F = s("F"), g = s("g1");
  const std::map<std::string, Dim> sizes{{"d", Dim(1024)}, {"n", Dim(8)}};
  CHECK((d / (g * F)).substituted(sizes).str() == "1024/g1/F");
  CHECK((d / (g * F)).substituted(sizes) == Dim(1024) / (g * F));
  CHECK((n * d).substituted(sizes) == Dim(8192));
  CHECK((d / (n + Dim(1))).substituted({{"n", F * g}}).str() == "d/(F*g1+1)");
  CHECK((Dim(2) * d + Dim(1)).substituted({{"d", g / Dim(2)}}).str() == "g1+1");
  CHECK((n * d + n).substituted({}).str() == (n * d + n).str());
  CHECK((d / F).substituted({{"F", d}}) == Dim(1));
  // A divisor that may be zero stays remembered; one substituted to 0 is a division by zero.
  CHECK_THROWS_AS((d / (n - Dim(1))).substituted({{"n", Dim(1)}}), DimError);
}
