#include "engine/lang/parser.h"

#include "engine/ir/decimal.h"
#include "engine/lang/lexer.h"

namespace prism {

namespace {

// Thrown inside the parser only; parse() turns it into a diagnostic and resynchronizes.
struct SyntaxError {
  SourceRange range;
  std::string message;
};

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& file) : t_(std::move(tokens)), file_(file) {}

  ParseResult run() {
    ParseResult out;
    while (true) {
      skip_separators();
      if (at(Tok::End)) break;
      size_t start = i_;
      try {
        if (!at(Tok::KwProgram)) fail_expected("'program'");
        out.programs.push_back(program());
      } catch (const SyntaxError& e) {
        out.diagnostics.push_back({file_, e.range, Severity::Error, e.message});
        if (i_ == start) ++i_;  // always make progress
        while (!at(Tok::End) && !at(Tok::KwProgram)) ++i_;
      }
    }
    return out;
  }

 private:
  const Token& peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  bool at(Tok k) const { return peek().kind == k; }
  const Token& advance() {
    const Token& t = peek();
    if (i_ < t_.size() - 1) ++i_;
    return t;
  }
  bool accept(Tok k) {
    if (!at(k)) return false;
    advance();
    return true;
  }
  [[noreturn]] void fail(const SourceRange& r, const std::string& msg) { throw SyntaxError{r, msg}; }
  [[noreturn]] void fail_expected(const std::string& what) {
    const Token& t = peek();
    if (t.kind == Tok::Error) fail(t.range, t.text);
    fail(t.range, "expected " + what + " but found " + describe(t));
  }
  const Token& expect(Tok k) {
    if (!at(k)) fail_expected(tok_spelling(k));
    return advance();
  }
  void skip_separators() {
    while (at(Tok::Newline) || at(Tok::Semicolon)) advance();
  }
  void skip_newlines() {
    while (at(Tok::Newline)) advance();
  }

  ProgramAst program() {
    ProgramAst p;
    p.range.begin = advance().range.begin;  // 'program'
    const Token& name = expect(Tok::Ident);
    p.name = name.text;
    p.name_range = name.range;
    expect(Tok::LParen);
    while (!at(Tok::RParen)) {
      p.params.push_back(param());
      if (!accept(Tok::Comma)) break;
    }
    expect(Tok::RParen);
    skip_newlines();
    expect(Tok::LBrace);
    while (true) {
      skip_separators();
      if (at(Tok::RBrace)) break;
      p.body.push_back(statement());
      if (!at(Tok::Newline) && !at(Tok::Semicolon) && !at(Tok::RBrace)) fail_expected(at(Tok::End) ? "'}'" : "end of line or ';'");
    }
    p.range.end = advance().range.end;  // '}'
    return p;
  }

  ParamAst param() {
    ParamAst a;
    const Token& name = expect(Tok::Ident);
    a.name = name.text;
    a.range = name.range;
    expect(Tok::Colon);
    const Token& dtype = expect(Tok::Ident);
    a.dtype = dtype.text;
    a.dtype_range = dtype.range;
    expect(Tok::LBracket);
    while (!at(Tok::RBracket)) {
      a.dims.push_back(expr());
      if (!accept(Tok::Comma)) break;
    }
    a.range.end = expect(Tok::RBracket).range.end;
    if (at(Tok::GreaterEq) || at(Tok::Greater)) a.domain = domain();
    else if (at(Tok::Less) || at(Tok::LessEq))
      fail(peek().range, "an input's domain is '>= 0' or '> 0'; an upper bound ('" + peek().text + "') is not one");
    else if (!at(Tok::Comma) && !at(Tok::RParen)) fail_expected("',', ')' or a domain ('>= 0', '> 0') after the type");
    return a;
  }

  // An input's domain after its type: `>= 0` (non-negative) or `> 0` (positive); the bound is 0.
  Domain domain() {
    const bool strict = advance().kind == Tok::Greater;
    const Token& bound = peek();
    if (bound.kind == Tok::Error) fail(bound.range, bound.text);
    if ((bound.kind != Tok::Integer && bound.kind != Tok::Float) || bound.number != 0)
      fail(bound.range, "an input's domain is '>= 0' or '> 0'; found " + describe(bound) + " after '" + (strict ? ">" : ">=") + "'");
    advance();
    return strict ? Domain::Positive : Domain::NonNegative;
  }

  StmtAst statement() {
    StmtAst s;
    s.range.begin = peek().range.begin;
    if (accept(Tok::KwReturn)) {
      s.is_return = true;
      s.values.push_back(expr());
      while (accept(Tok::Comma)) s.values.push_back(expr());
    } else {
      while (true) {
        const Token& name = expect(Tok::Ident);
        s.targets.push_back(name.text);
        s.target_ranges.push_back(name.range);
        if (!accept(Tok::Comma)) break;
      }
      expect(Tok::Assign);
      s.values.push_back(expr());
    }
    s.range.end = s.values.back()->range.end;
    return s;
  }

  ExprPtr binary(const std::string& op, ExprPtr lhs, ExprPtr rhs) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::Binary;
    e->op = op;
    e->range = {lhs->range.begin, rhs->range.end};
    e->depth = std::max(lhs->depth, rhs->depth) + 1;
    if (e->depth > kMaxExprDepth) fail(e->range, "expression nested too deeply (limit " + std::to_string(kMaxExprDepth) + ")");
    e->args.push_back(std::move(lhs));
    e->args.push_back(std::move(rhs));
    return e;
  }

  // Guards the recursion of the descent itself (parentheses, unary minus, call arguments).
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxExprDepth)
        p.fail(p.peek().range, "expression nested too deeply (limit " + std::to_string(kMaxExprDepth) + ")");
    }
    ~DepthGuard() { --p.depth_; }
  };

  bool at_comparison() const {
    return at(Tok::Greater) || at(Tok::GreaterEq) || at(Tok::Less) || at(Tok::LessEq) || at(Tok::EqEq) || at(Tok::NotEq);
  }

  // Lowest first: a comparison (one, as they do not chain), + and -, * / @, unary minus, ** (right
  // to left, its exponent may be negated: x ** -1), then an attribute (X.T), as in Python.
  ExprPtr expr() {
    DepthGuard guard(*this);
    ExprPtr lhs = sum();
    if (at_comparison()) {
      const std::string op = advance().text;
      lhs = binary(op, std::move(lhs), sum());
      if (at_comparison()) fail(peek().range, "comparisons do not chain: compare two values at a time and multiply the results");
    }
    return lhs;
  }

  ExprPtr sum() {
    ExprPtr lhs = term();
    while (at(Tok::Plus) || at(Tok::Minus)) {
      const std::string op = advance().text;
      lhs = binary(op, std::move(lhs), term());
    }
    return lhs;
  }

  ExprPtr term() {
    ExprPtr lhs = unary();
    while (at(Tok::Star) || at(Tok::Slash) || at(Tok::At)) {
      const std::string op = advance().text;
      lhs = binary(op, std::move(lhs), unary());
    }
    return lhs;
  }

  ExprPtr power() {
    ExprPtr base = postfix();
    if (!at(Tok::StarStar)) return base;
    advance();
    DepthGuard guard(*this);
    return binary("**", std::move(base), unary());
  }

  ExprPtr postfix() {
    ExprPtr e = primary();
    while (at(Tok::Dot)) {
      advance();
      const Token& name = expect(Tok::Ident);
      auto attr = std::make_unique<Expr>();
      attr->kind = Expr::Kind::Attribute;
      attr->name = name.text;
      attr->name_range = name.range;
      attr->range = {e->range.begin, name.range.end};
      attr->depth = e->depth + 1;
      if (attr->depth > kMaxExprDepth) fail(attr->range, "expression nested too deeply (limit " + std::to_string(kMaxExprDepth) + ")");
      attr->args.push_back(std::move(e));
      e = std::move(attr);
    }
    return e;
  }

  ExprPtr unary() {
    if (at(Tok::Minus)) {
      DepthGuard guard(*this);
      SourcePos begin = advance().range.begin;
      auto e = std::make_unique<Expr>();
      e->kind = Expr::Kind::Neg;
      ExprPtr operand = unary();
      e->range = {begin, operand->range.end};
      e->depth = operand->depth + 1;
      if (e->depth > kMaxExprDepth) fail(e->range, "expression nested too deeply (limit " + std::to_string(kMaxExprDepth) + ")");
      e->args.push_back(std::move(operand));
      return e;
    }
    return power();
  }

  ExprPtr primary() {
    const Token& t = peek();
    auto e = std::make_unique<Expr>();
    e->range = t.range;
    switch (t.kind) {
      case Tok::Integer:
      case Tok::Float:
        e->kind = Expr::Kind::Number;
        e->number = t.number;
        e->is_integer = t.kind == Tok::Integer;
        e->integer = t.integer;
        if (t.kind == Tok::Float) e->decimal = exact_decimal(t.text);
        advance();
        return e;
      case Tok::KwTrue:
      case Tok::KwFalse:
        e->kind = Expr::Kind::Bool;
        e->boolean = t.kind == Tok::KwTrue;
        advance();
        return e;
      case Tok::LParen: {
        advance();
        ExprPtr inner = expr();
        SourcePos end = expect(Tok::RParen).range.end;
        inner->range = {e->range.begin, end};
        return inner;
      }
      case Tok::LBracket: {
        advance();
        e->kind = Expr::Kind::List;
        while (!at(Tok::RBracket)) {
          e->args.push_back(expr());
          e->depth = std::max(e->depth, e->args.back()->depth + 1);
          if (!accept(Tok::Comma)) break;
        }
        e->range.end = expect(Tok::RBracket).range.end;
        return e;
      }
      case Tok::Ident: {
        advance();
        e->name = t.text;
        if (!at(Tok::LParen)) {
          e->kind = Expr::Kind::Name;
          return e;
        }
        e->kind = Expr::Kind::Call;
        e->name_range = t.range;
        advance();
        while (!at(Tok::RParen)) {
          std::string keyword;
          SourceRange keyword_range;
          if (at(Tok::Ident) && peek(1).kind == Tok::Assign) {
            keyword = peek().text;
            keyword_range = peek().range;
            advance();
            advance();
          }
          e->args.push_back(expr());
          e->depth = std::max(e->depth, e->args.back()->depth + 1);
          e->keywords.push_back(keyword);
          e->keyword_ranges.push_back(keyword_range);
          if (!accept(Tok::Comma)) break;
        }
        e->range.end = expect(Tok::RParen).range.end;
        return e;
      }
      default:
        fail_expected("an expression");
    }
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
  std::string file_;
};

}  // namespace

ParseResult parse(std::string_view text, const std::string& file) { return Parser(lex(text), file).run(); }

}  // namespace prism
