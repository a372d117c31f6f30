#include "engine/backend/c_expr.h"

#include <charconv>
#include <cmath>

#include <cctype>

#include "engine/error.h"

namespace prism::backend {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `e` must be parenthesized where it stands for an operand: it has an operator outside
// brackets (a name, a literal, a call or an indexed element need none).
bool needs_parens(const std::string& e) {
  int depth = 0;
  for (char c : e) {
    if (c == '(' || c == '[') ++depth;
    else if (c == ')' || c == ']') --depth;
    else if (depth == 0 && !ident_char(c) && c != '.') return true;
  }
  return false;
}

// The formula with its operands x, y replaced and its math functions in the dialect.
std::string substitute(const std::string& formula, const std::vector<std::string>& operands, const Dialect& dialect) {
  std::string out;
  for (size_t i = 0; i < formula.size();) {
    const char c = formula[i];
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < formula.size() && std::isdigit(static_cast<unsigned char>(formula[i + 1])))) {
      size_t j = i;  // a number: digits, '.', an exponent with its sign, the f suffix
      while (j < formula.size() && (ident_char(formula[j]) || formula[j] == '.' ||
                                    ((formula[j] == '-' || formula[j] == '+') && (formula[j - 1] == 'e' || formula[j - 1] == 'E'))))
        ++j;
      out.append(formula, i, j - i);
      i = j;
    } else if (ident_start(c)) {
      size_t j = i;
      while (j < formula.size() && ident_char(formula[j])) ++j;
      const std::string name = formula.substr(i, j - i);
      const size_t operand = name == "x" ? 0 : name == "y" ? 1 : operands.size();
      if (operand < operands.size()) {
        const std::string& e = operands[operand];
        out += needs_parens(e) ? "(" + e + ")" : e;
      } else {
        // A call: C's math in the dialect; the table's own helpers (prism_*) as they are.
        const bool math_call = j < formula.size() && formula[j] == '(' && name.rfind("prism_", 0) != 0;
        out += math_call ? math_function(name, dialect) : name;
      }
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

}  // namespace

std::string math_function(const std::string& name, const Dialect& dialect) { return dialect.builtin_math ? "__builtin_" + name : name; }

std::string elementwise_expr(Op op, const std::vector<std::string>& operands, const Dialect& dialect, const std::string& who) {
  const OpInfo& info = op_info(op);
  if (!is_elementwise(op) || size_t(info.arity) != operands.size())
    throw Error(Error::Kind::InvalidArgument, who + ": '" + info.name + "' is not an elementwise op it can lower");
  // Built by appending: GCC 12 warns falsely (-Wrestrict) about a chain of + on a temporary here.
  std::string e = "(";
  if (info.cls == OpClass::Unary) return std::string("prism_").append(info.name).append(e).append(operands[0]).append(")");
  return e.append(substitute(info.c_expr, operands, dialect)).append(")");
}

std::string elementwise_functions(const Dialect& dialect) {
  std::string s = std::string(dialect.function_prefix) + " float prism_select(bool c, float v) { return " + dialect.select_bits + "; }\n";
  for (const OpInfo& info : op_table())
    if (info.cls == OpClass::Unary)
      s += std::string(dialect.function_prefix) + " float prism_" + info.name + "(float x) { return " +
           substitute(info.c_expr, {"x"}, dialect) + "; }\n";
  return s;
}

std::string float_literal(double value) {
  const float f = float(value);
  if (std::isnan(f)) return "(0.0f / 0.0f)";
  if (std::isinf(f)) return f > 0 ? "(1.0f / 0.0f)" : "(-1.0f / 0.0f)";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, f);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

}  // namespace prism::backend
