// The syntax tree the parser produces: programs as written, before names or shapes are resolved.
// One expression grammar serves tensor expressions, dim expressions (f16[n, d/2]) and argument
// values (axis=-1, perm=[0, 2, 1]); the IR builder decides what each position needs.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/diagnostic.h"
#include "engine/ir/domain.h"
#include "engine/ir/rational.h"

namespace prism {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind { Name, Number, Bool, Neg, Binary, Call, List, Attribute };
  Kind kind = Kind::Name;
  SourceRange range;
  std::string name;          // Name: the name; Call: the callee; Attribute: the attribute (X.T: "T")
  SourceRange name_range;    // Call: the callee's range; Attribute: the attribute's
  double number = 0;         // Number
  bool is_integer = false;   // Number written without '.' or exponent
  int64_t integer = 0;       // Number when is_integer
  std::optional<Rational> decimal;  // Number with a fraction or exponent, when exact (engine/ir/decimal.h)
  bool boolean = false;      // Bool
  std::string op;            // Binary: "+" "-" "*" "/" "@" "**" ">" ">=" "<" "<=" "==" "!="
  std::vector<ExprPtr> args; // Neg: 1; Binary: 2; Call: arguments; List: items; Attribute: the object
  std::vector<std::string> keywords;  // Call: keyword per argument ("" when positional)
  std::vector<SourceRange> keyword_ranges;
  int depth = 1;             // height of this subtree (the parser bounds it)
};

struct ParamAst {
  std::string name;
  SourceRange range;
  std::string dtype;
  SourceRange dtype_range;
  std::vector<ExprPtr> dims;
  Domain domain = Domain::Any;  // `>= 0` or `> 0` after the type
};

struct StmtAst {
  bool is_return = false;
  std::vector<std::string> targets;  // assignment: the names on the left
  std::vector<SourceRange> target_ranges;
  std::vector<ExprPtr> values;       // assignment: one; return: one per result
  SourceRange range;
};

struct ProgramAst {
  std::string name;
  SourceRange name_range;
  SourceRange range;  // from 'program' to '}'
  std::vector<ParamAst> params;
  std::vector<StmtAst> body;
};

}  // namespace prism
