// Walks a program's values in definition order and calls one hook per op class (the Halide
// IRVisitor style). A pass derives from Visitor and overrides the hooks it cares about; a hook it
// does not override falls back to visit_default, so a pass can reject what it does not handle.
#pragma once
#include "engine/ir/program.h"

namespace prism {

class Visitor {
 public:
  virtual ~Visitor() = default;

  void visit(const Program& program) {
    for (const Value& v : program.values) dispatch(v);
  }

  void dispatch(const Value& v) {
    switch (op_class(v.op)) {
      case OpClass::Input: return visit_input(v);
      case OpClass::Const: return visit_const(v);
      case OpClass::Unary: return visit_unary(v);
      case OpClass::Binary: return visit_binary(v);
      case OpClass::Matmul: return visit_matmul(v);
      case OpClass::Reduce: return visit_reduce(v);
      case OpClass::Composite: return visit_composite(v);
      case OpClass::Transpose: return visit_transpose(v);
      case OpClass::Reshape: return visit_reshape(v);
      case OpClass::Concat: return visit_concat(v);
      case OpClass::Split: return visit_split(v);
    }
  }

 protected:
  virtual void visit_default(const Value&) {}
  virtual void visit_input(const Value& v) { visit_default(v); }
  virtual void visit_const(const Value& v) { visit_default(v); }
  virtual void visit_unary(const Value& v) { visit_default(v); }
  virtual void visit_binary(const Value& v) { visit_default(v); }
  virtual void visit_matmul(const Value& v) { visit_default(v); }
  virtual void visit_reduce(const Value& v) { visit_default(v); }
  virtual void visit_composite(const Value& v) { visit_default(v); }
  virtual void visit_transpose(const Value& v) { visit_default(v); }
  virtual void visit_reshape(const Value& v) { visit_default(v); }
  virtual void visit_concat(const Value& v) { visit_default(v); }
  virtual void visit_split(const Value& v) { visit_default(v); }
};

}  // namespace prism
