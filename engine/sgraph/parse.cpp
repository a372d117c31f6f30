#include "engine/sgraph/parse.h"

#include <cctype>
#include <cstdlib>
#include <algorithm>
#include <map>

#include "engine/error.h"
#include "engine/ir/decimal.h"

namespace prism::sgraph {

namespace {

struct Token {
  enum Kind { Name, Int, Number, Var, Punct, End } kind = End;
  std::string text;
  int col = 1;
};

// One line's tokens; "#" starts a comment that runs to the end of the line.
std::vector<Token> tokenize(std::string_view line, int line_no) {
  std::vector<Token> out;
  size_t i = 0;
  auto fail = [&](const std::string& m) {
    throw Error(Error::Kind::InvalidArgument, "line " + std::to_string(line_no) + ", col " + std::to_string(i + 1) + ": " + m);
  };
  while (i < line.size()) {
    char c = line[i];
    if (c == '#') break;
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    Token t;
    t.col = int(i) + 1;
    auto word = [&](size_t from) {
      size_t j = from;
      while (j < line.size() && (std::isalnum(static_cast<unsigned char>(line[j])) || line[j] == '_')) ++j;
      return j;
    };
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = word(i);
      t = {Token::Name, std::string(line.substr(i, j - i)), t.col};
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
      t = {Token::Int, std::string(line.substr(i, j - i)), t.col};
      // A float constant (const(1e-06), const(0.125)): digits, a fraction, an exponent.
      if (j < line.size() && (line[j] == '.' || line[j] == 'e' || line[j] == 'E')) {
        if (line[j] == '.')
          for (++j; j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]));) ++j;
        if (j < line.size() && (line[j] == 'e' || line[j] == 'E')) {
          ++j;
          if (j < line.size() && (line[j] == '-' || line[j] == '+')) ++j;
          while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
        }
        t = {Token::Number, std::string(line.substr(i, j - i)), t.col};
      }
      i = j;
    } else if (c == '?') {
      size_t j = word(i + 1);
      if (j == i + 1) fail("expected a choice variable name after '?'");
      t = {Token::Var, std::string(line.substr(i + 1, j - i - 1)), t.col};
      i = j;
    } else if (c == '-' && i + 1 < line.size() && line[i + 1] == '>') {
      t = {Token::Punct, "->", t.col};
      i += 2;
    } else if (std::string_view(":=,()[]{}+-*/").find(c) != std::string_view::npos) {
      t = {Token::Punct, std::string(1, c), t.col};
      ++i;
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    out.push_back(t);
  }
  Token end;
  end.col = int(line.size()) + 1;
  out.push_back(end);
  return out;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  SGraph run() {
    size_t start = 0;
    while (start <= text_.size()) {
      size_t end = text_.find('\n', start);
      if (end == std::string_view::npos) end = text_.size();
      ++line_no_;
      toks_ = tokenize(text_.substr(start, end - start), line_no_);
      pos_ = 0;
      if (peek().kind != Token::End) {
        try {
          statement();
        } catch (const DimError& e) {  // overflow in a dim expression
          fail(std::string("a valid dim (") + e.what() + ")", peek());
        }
      }
      start = end + 1;
    }
    return std::move(g_);
  }

 private:
  const Token& peek(size_t ahead = 0) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  Token next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }

  [[noreturn]] void fail(const std::string& what, const Token& at) const {
    std::string found = at.kind == Token::End ? "end of line" : "'" + std::string(at.kind == Token::Var ? "?" : "") + at.text + "'";
    throw Error(Error::Kind::InvalidArgument,
                "line " + std::to_string(line_no_) + ", col " + std::to_string(at.col) + ": expected " + what + " but found " + found);
  }

  bool is(const char* punct) const { return peek().kind == Token::Punct && peek().text == punct; }
  bool is_word(const char* w) const { return peek().kind == Token::Name && peek().text == w; }
  void expect(const char* punct) {
    if (!is(punct)) fail(std::string("'") + punct + "'", peek());
    next();
  }
  void expect_word(const char* w) {
    if (!is_word(w)) fail(std::string("'") + w + "'", peek());
    next();
  }
  std::string name(const char* what) {
    if (peek().kind != Token::Name) fail(what, peek());
    return next().text;
  }
  int64_t integer(const char* what) {
    if (peek().kind != Token::Int) fail(what, peek());
    Token t = next();
    if (t.text.size() > 15) fail("a smaller integer", t);
    return std::stoll(t.text);
  }
  void end_of_line() {
    if (peek().kind != Token::End) fail("end of line", peek());
  }

  void statement() {
    if (is_word("input")) return input();
    if (is_word("output")) return output();
    if (is_word("kernel")) return kernel();
    if (!custom_) fail("'input', 'kernel' or 'output'", peek());
    if (is_word("save")) return save();
    block_value();
  }

  void input() {
    next();
    TensorDecl d;
    d.name = name("an input name");
    expect(":");
    d.type = type();
    end_of_line();
    g_.inputs.push_back(d);
    custom_ = nullptr;
  }

  void output() {
    next();
    g_.outputs.push_back(name("an output name"));
    while (is(",")) {
      next();
      g_.outputs.push_back(name("an output name"));
    }
    end_of_line();
    custom_ = nullptr;
  }

  Type type() {
    Type t;
    Token at = peek();
    auto dt = parse_dtype(name("a dtype (f32, f16, bf16)"));
    if (!dt) fail("a dtype (f32, f16, bf16)", at);
    t.dtype = *dt;
    expect("[");
    if (!is("]")) {
      t.shape.push_back(dim());
      while (is(",")) {
        next();
        t.shape.push_back(dim());
      }
    }
    expect("]");
    return t;
  }

  DType dtype() {
    Token at = peek();
    auto dt = parse_dtype(name("a dtype (f32, f16, bf16)"));
    if (!dt) fail("a dtype (f32, f16, bf16)", at);
    return *dt;
  }

  // dim := term { (+|-) term }; term := atom { (*|/) atom }; atom := INT | NAME | ( dim )
  Dim dim() {
    Dim d = term();
    while (is("+") || is("-")) {
      bool plus = next().text == "+";
      Dim r = term();
      d = plus ? d + r : d - r;
    }
    return d;
  }
  Dim term() {
    Dim d = atom();
    while (is("*") || is("/")) {
      Token op = next();
      Dim r = atom();
      try {
        d = op.text == "*" ? d * r : d / r;
      } catch (const DimError& e) {
        fail(std::string("a valid dim (") + e.what() + ")", op);
      }
    }
    return d;
  }
  Dim atom() {
    if (peek().kind == Token::Int) return Dim(integer("a dim"));
    if (peek().kind == Token::Name) return Dim::symbol(next().text);
    if (is("(")) {
      next();
      Dim d = dim();
      expect(")");
      return d;
    }
    fail("a dim (a name, an integer or a parenthesized expression)", peek());
  }

  void kernel() {
    next();
    Token at = peek();
    int64_t index = integer("a kernel number");
    if (index != int64_t(g_.kernels.size()))
      fail("kernel number " + std::to_string(g_.kernels.size()) + " (kernels are numbered in order)", at);
    expect(":");
    Kernel k;
    if (is_word("custom")) {
      next();
      k.custom = true;
      expect_word("grid");
      expect("=");
      expect("[");
      if (!is("]")) {
        k.block.grid.push_back(dim());
        while (is(",")) {
          next();
          k.block.grid.push_back(dim());
        }
      }
      expect("]");
      if (is_word("loop")) {
        next();
        expect("=");
        k.block.loop = dim();
      }
      end_of_line();
      g_.kernels.push_back(k);
      custom_ = &g_.kernels.back().block;
      names_.clear();
      return;
    }
    LibraryKernel& lib = k.library;
    lib.output = name("a tensor name or 'custom'");
    expect(":");
    lib.dtype = dtype();
    expect("=");
    lib.op = op_name_token();
    expect("(");
    auto input = [&] {
      lib.inputs.push_back(name("a tensor name"));
      std::vector<int> v;
      if (is_word("view")) {
        next();
        v = view();
      }
      lib.views.push_back(std::move(v));
    };
    input();
    while (is(",") && peek(1).kind == Token::Name && peek(2).text != "=") {
      next();
      input();
    }
    if (std::all_of(lib.views.begin(), lib.views.end(), [](const std::vector<int>& v) { return v.empty(); })) lib.views.clear();
    while (is(",") && peek(1).kind == Token::Name && peek(2).text == "=") {
      next();
      attr(lib.attrs);
    }
    expect(")");
    end_of_line();
    g_.kernels.push_back(k);
    custom_ = nullptr;
  }

  Op op_name_token() {
    Token at = peek();
    auto op = op_from_name(name("an op name"));
    if (!op) fail("an op name (matmul, add, exp, sum, …)", at);
    return *op;
  }

  void attr(Attrs& attrs) {
    Token at = peek();
    std::string key = name("an attribute (axis, keepdims, parts, index, shape, perm)");
    expect("=");
    if (key == "shape") {
      expect("[");
      attrs.shape.clear();
      while (!is("]")) {
        if (!attrs.shape.empty()) expect(",");
        attrs.shape.push_back(dim());
      }
      expect("]");
    } else if (key == "perm") {
      attrs.perm = view();
    } else if (key == "parts" || key == "index") {
      (key == "parts" ? attrs.parts : attrs.index) = int(integer(key == "parts" ? "a part count" : "a part index"));
    } else if (key == "axis") {
      bool neg = is("-");
      if (neg) next();
      int64_t v = integer("an axis");
      attrs.axis = int(neg ? -v : v);
    } else if (key == "keepdims") {
      Token v = peek();
      std::string b = name("true or false");
      if (b != "true" && b != "false") fail("true or false", v);
      attrs.keepdims = b == "true";
    } else {
      fail("an attribute (axis, keepdims, parts, index, shape, perm)", at);
    }
  }

  int operand() {
    Token at = peek();
    std::string n = name("a value name");
    auto it = names_.find(n);
    if (it == names_.end()) fail("a value defined earlier in this kernel", at);
    return it->second;
  }

  void define(BlockOp op, const Token& at) {
    if (names_.count(op.name)) fail("a new value name ('" + op.name + "' is defined earlier in this kernel)", at);
    names_[op.name] = int(custom_->ops.size());
    custom_->ops.push_back(std::move(op));
  }

  void block_value() {
    Token at = peek();
    BlockOp op;
    op.name = name("a value name, 'save', 'kernel' or 'output'");
    expect("=");
    if (is_word("load")) {
      next();
      op.kind = BlockOp::Kind::Load;
      op.tensor = name("a tensor name");
      if (is_word("view")) {
        next();
        op.view = view();
      }
      expect_word("map");
      op.map = map();
    } else {
      Token fn = peek();
      std::string f = name("an op or accumulator name");
      expect("(");
      if (auto acc = acc_from_name(f)) {
        op.kind = BlockOp::Kind::Accumulate;
        op.acc = *acc;
        op.operands.push_back(operand());
        if (op.acc == sgraph::AccKind::Rescaled) {  // (x, m): the value and the max it is relative to
          expect(",");
          op.operands.push_back(operand());
        }
      } else if (f == "const") {
        op.kind = BlockOp::Kind::Compute;
        op.op = Op::Const;
        op.attrs.constant = constant();
      } else if (auto o = op_from_name(f)) {
        op.kind = BlockOp::Kind::Compute;
        op.op = *o;
        op.operands.push_back(operand());
        if (is(",") && peek(1).kind == Token::Name && peek(2).text != "=") {
          next();
          op.operands.push_back(operand());
        }
      } else {
        fail("an op name (matmul, add, exp, sum, …) or an accumulator (sum_accumulate, max_accumulate, rms_accumulate)", fn);
      }
      while (is(",")) {
        next();
        attr(op.attrs);
      }
      expect(")");
    }
    end_of_line();
    define(std::move(op), at);
  }

  // view := "[" ( INT | "-" ) { "," ( INT | "-" ) } "]"
  std::vector<int> view() {
    std::vector<int> v;
    expect("[");
    do {
      if (!v.empty()) next();
      if (is("-")) {
        next();
        v.push_back(BlockOp::kNewAxis);
      } else {
        v.push_back(int(integer("a tensor dim or '-'")));
      }
    } while (is(","));
    expect("]");
    return v;
  }

  // A float literal (1e-06, 0.125, a negative one in parentheses) or an exact dim expression.
  Constant constant() {
    const bool neg = is("(") && peek(1).kind == Token::Punct && peek(1).text == "-";
    if (neg) next(), next();
    Constant c;
    if (peek().kind == Token::Number) {
      const std::string text = next().text;
      c.number = std::strtod(text.c_str(), nullptr);
      if (auto r = exact_decimal(text)) c.exact = Dim::constant(*r);  // as a program's literal reads
    } else {
      c.exact = dim();
    }
    if (!neg) return c;
    expect(")");
    if (c.exact) c.exact = Dim(0) - *c.exact;
    else c.number = -c.number;
    return c;
  }

  void save() {
    next();
    BlockOp op;
    op.kind = BlockOp::Kind::Save;
    op.name = name("a tensor name");
    expect(":");
    op.dtype = dtype();
    expect("=");
    op.operands.push_back(operand());
    if (is_word("view")) {
      next();
      op.view = view();
    }
    expect_word("map");
    op.map = map();
    end_of_line();
    custom_->ops.push_back(std::move(op));
  }

  Choice choice() {
    if (peek().kind == Token::Var) return Choice::variable(next().text);
    if (is("-")) {
      next();
      return Choice::none();
    }
    return Choice::of(int(integer("a data dim, '-' or a ?variable")));
  }

  Map map() {
    Map m;
    m.grid.assign(custom_->grid.size(), Choice::none());
    expect("{");
    expect_word("grid");
    expect(":");
    if (is("-") && !(peek(1).kind == Token::Punct && peek(1).text == "->")) {
      next();
    } else {
      do {
        Choice c = choice();
        expect("->");
        Token at = peek();
        Dim g = dim();
        size_t i = 0;
        while (i < custom_->grid.size() && custom_->grid[i] != g) ++i;
        if (i == custom_->grid.size()) fail("a grid dim of this kernel", at);
        if (!m.grid[i].is_none()) fail("each grid dim once in a map", at);
        m.grid[i] = c;
      } while (!is(","));
    }
    expect(",");
    expect_word("loop");
    expect(":");
    m.loop = choice();
    expect("}");
    return m;
  }

  std::string_view text_;
  SGraph g_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int line_no_ = 0;
  CustomKernel* custom_ = nullptr;
  std::map<std::string, int> names_;
};

}  // namespace

SGraph parse(std::string_view text) { return Parser(text).run(); }

}  // namespace prism::sgraph
