#include <catch2/catch.hpp>

#include "compile_helpers.h"
#include "engine/lang/lexer.h"
#include "engine/lang/parser.h"

using namespace prism;
using prism::test::diag_lines;

TEST_CASE("lexer tracks 1-based lines and byte columns", "[engine][parser]") {
  auto toks = lex("a = 1.5e3 # c\n  bb(x)");
  REQUIRE(toks.size() >= 8);
  CHECK(toks[0].kind == Tok::Ident);
  CHECK(toks[2].kind == Tok::Float);
  CHECK(toks[2].number == 1500.0);
  CHECK(toks[3].kind == Tok::Newline);
  CHECK(toks[4].text == "bb");
  CHECK(toks[4].range.begin == SourcePos{2, 3});
  CHECK(toks[4].range.end == SourcePos{2, 5});
  auto nested = lex("f(a,\n b)\n");
  int newlines = 0;
  for (const auto& t : nested) newlines += t.kind == Tok::Newline;
  CHECK(newlines == 1);  // the one inside ( ) does not end a statement
}

TEST_CASE("parser builds programs with Python precedence", "[engine][parser]") {
  auto r = parse("program p(X: f32[n]) {\n  Y = -X * X + X / X @ X - X\n  return Y\n}\n", "f");
  REQUIRE(r.diagnostics.empty());
  REQUIRE(r.programs.size() == 1);
  const Expr& e = *r.programs[0].body[0].values[0];
  // ((( -X * X ) + ((X / X) @ X)) - X)
  REQUIRE(e.kind == Expr::Kind::Binary);
  CHECK(e.op == "-");
  const Expr& plus = *e.args[0];
  CHECK(plus.op == "+");
  CHECK(plus.args[0]->op == "*");
  CHECK(plus.args[0]->args[0]->kind == Expr::Kind::Neg);
  CHECK(plus.args[1]->op == "@");
  CHECK(plus.args[1]->args[0]->op == "/");
}

TEST_CASE("parser: comparisons lowest, ** right to left above unary minus, attributes tightest", "[engine][parser][spellings]") {
  auto r = parse("program p(X: f32[n]) {\n  Y = -X ** 2 ** X.T + 1 >= X\n  return Y\n}\n", "f");
  REQUIRE(r.diagnostics.empty());
  const Expr& e = *r.programs[0].body[0].values[0];
  // ((-(X ** (2 ** X.T))) + 1) >= X
  CHECK(e.op == ">=");
  const Expr& plus = *e.args[0];
  CHECK(plus.op == "+");
  const Expr& neg = *plus.args[0];
  REQUIRE(neg.kind == Expr::Kind::Neg);
  const Expr& pow = *neg.args[0];
  CHECK(pow.op == "**");
  CHECK(pow.args[1]->op == "**");
  CHECK(pow.args[1]->args[1]->kind == Expr::Kind::Attribute);
  CHECK(pow.args[1]->args[1]->name == "T");
  for (const char* op : {">", ">=", "<", "<=", "==", "!="}) {
    auto c = parse(std::string("program p(X: f32[n]) {\n  return X ") + op + " 0\n}\n", "f");
    REQUIRE(c.diagnostics.empty());
    CHECK(c.programs[0].body[0].values[0]->op == op);
  }
  auto bang = parse("program p(X: f32[n]) {\n  return !X\n}\n", "f");
  REQUIRE(bang.diagnostics.size() == 1);
  CHECK(bang.diagnostics[0].message == "unexpected character '!'");
}

TEST_CASE("statements split on newlines or semicolons; comments run to end of line", "[engine][parser]") {
  auto r = parse("# header\nprogram p(X: f32[n]) { A = X; B = A # c\n return B }\nprogram q(X: f32[2]) {\n return X\n}", "f");
  CHECK(r.diagnostics.empty());
  REQUIRE(r.programs.size() == 2);
  CHECK(r.programs[0].body.size() == 3);
  CHECK(r.programs[1].name == "q");
}

TEST_CASE("syntax errors say what was found and what was expected", "[engine][parser]") {
  CHECK(diag_lines("program p(X: f16[n, d], W: f16[d, d]) {\n  return matmul(X W)\n}\n") ==
        "2:19: expected ')' but found 'W'\n");
  CHECK(diag_lines("program p(X: f16[n]) {\n  Y = X +\n  return Y\n}\n") == "2:10: expected an expression but found end of line\n");
  CHECK(diag_lines("program p(X f16[n]) { return X }") == "1:13: expected ':' but found 'f16'\n");
  CHECK(diag_lines("program p(X: f16[n]) { return X $ }") == "1:33: unexpected character '$'\n");
  CHECK(diag_lines("hello") == "1:1: expected 'program' but found 'hello'\n");
  CHECK(diag_lines("program p(X: f16[n]) { return X") == "1:32: expected '}' but found end of file\n");
  CHECK(diag_lines("program p(X: f16[n]) { Y = 12abc\n return Y }") == "1:28: malformed number '12a'\n");
  CHECK(diag_lines("program p(X: f16[n]) { Y = 99999999999999999999\n return Y }") ==
        "1:28: integer 99999999999999999999 is too large\n");
  CHECK(diag_lines("program p(X: f16[n]) { Y = X X\n return Y }") == "1:30: expected end of line or ';' but found 'X'\n");
}

TEST_CASE("parsing recovers at the next program", "[engine][parser]") {
  std::string text =
      "program bad(X: f16[n]) {\n  Y = (X\n}\n"
      "program good(X: f16[n]) {\n  return exp(X)\n}\n"
      "program bad2(X: f16[n]) {\n  return X +\n}\n"
      "program good2(X: f16[n]) { return X }\n";
  auto r = compile_text(text, "f.prism");
  REQUIRE(r.programs.size() == 2);
  CHECK(r.programs[0].name == "good");
  CHECK(r.programs[1].name == "good2");
  REQUIRE(r.diagnostics.size() == 2);
  CHECK(r.diagnostics[0].range.begin.line == 3);
  CHECK(r.diagnostics[1].range.begin.line == 8);
  CHECK(r.diagnostics[0].file == "f.prism");
}

TEST_CASE("nesting depth is limited with a clear error", "[engine][parser]") {
  std::string deep = "program p(X: f16[n]) { return " + std::string(5000, '(') + "X" + std::string(5000, ')') + " }";
  CHECK(diag_lines(deep).find("nested too deeply") != std::string::npos);
  std::string chain = "program p(X: f16[n]) { return X";
  for (int i = 0; i < 20000; ++i) chain += "+X";
  CHECK(diag_lines(chain + " }").find("nested too deeply") != std::string::npos);
  std::string negs = "program p(X: f16[n]) { return " + std::string(100000, '-') + "X }";
  CHECK(diag_lines(negs).find("nested too deeply") != std::string::npos);
  std::string calls = "program p(X: f16[n]) { return ";
  for (int i = 0; i < 3000; ++i) calls += "exp(";
  calls += "X" + std::string(3000, ')') + " }";
  CHECK(diag_lines(calls).find("nested too deeply") != std::string::npos);
}
