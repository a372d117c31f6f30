// The SSA IR every later pass consumes: a program is a list of values in definition order, each
// computed by one op from earlier values, with its dtype, symbolic shape and source position.
// Composites (mean, rms_norm, softmax) exist only before lower_composites; passes after it see
// primitives only. Passes walk the IR with ir::Visitor (visitor.h), one pass per file.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "engine/diagnostic.h"
#include "engine/ir/dim.h"
#include "engine/ir/domain.h"
#include "engine/ir/dtype.h"
#include "engine/ir/ops.h"

namespace prism {

struct Type {
  DType dtype = DType::F32;
  std::vector<Dim> shape;
  bool weak = false;  // a scalar constant: adopts the other operand's dtype, never widens it
  bool operator==(const Type&) const = default;
};

// A scalar constant: exact (an integer, a rational, or a symbolic dim such as the reduced size
// in mean) or a floating-point number (eps=1e-6).
struct Constant {
  std::optional<Dim> exact;
  double number = 0;

  // Its value under the bindings; throws Error{InvalidArgument} naming an unbound dim.
  double value(const DimBindings& bindings) const;
};

struct Attrs {
  int axis = -1;              // Sum Max Rms Mean Softmax Concat Split; normalized to >= 0 by inference
  bool keepdims = true;       // Sum Max Rms Mean
  std::vector<int> perm;      // Transpose; empty before inference means "swap the last two"
  std::vector<Dim> shape;     // Reshape: the target shape
  int parts = 0;              // Split: how many parts
  int index = 0;              // Split: which part this value is
  std::optional<double> eps;  // RmsNorm, LayerNorm
  std::optional<DType> dtype; // Cast: the dtype it rounds to
  Constant constant;          // Const
};

struct Value {
  int id = 0;                 // index in Program::values
  std::string name;           // unique in the program; empty for constants (printed inline)
  bool named = false;         // the user named it (an input or an assignment target)
  Op op = Op::Input;
  std::vector<int> operands;  // ids of earlier values
  Attrs attrs;
  Type type;
  Domain domain = Domain::Any;  // an input's declared domain (inferred ones: input_domains.h)
  SourceRange pos;
};

struct Program {
  std::string name;
  std::string file;
  SourceRange pos;                // the program's name in the source
  std::vector<Value> values;      // SSA, in definition order; values[i].id == i
  std::vector<int> inputs;        // parameter order
  std::vector<int> outputs;       // return order
  std::vector<std::string> dims;  // symbolic dim names in order of first appearance

  const Value& value(int id) const { return values.at(size_t(id)); }
  bool has_composites() const;
};

}  // namespace prism
