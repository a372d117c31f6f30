// Small helpers shared by the engine's language tests.
#pragma once
#include <string>

#include "engine/ir/ops.h"
#include "engine/lang/compile.h"

namespace prism::test {

// The diagnostics of `text` as "line:col: message" lines.
inline std::string diag_lines(const std::string& text) {
  std::string out;
  for (const auto& d : compile_text(text, "t.prism").diagnostics)
    out += std::to_string(d.range.begin.line) + ":" + std::to_string(d.range.begin.col) + ": " + d.message + "\n";
  return out;
}

// The only program of `text`; fails the test when there are diagnostics.
inline Program only_program(const std::string& text) {
  CompileResult r = compile_text(text, "t.prism");
  std::string diags;
  for (const auto& d : r.diagnostics) diags += d.format() + "\n";
  if (!r.diagnostics.empty() || r.programs.size() != 1) throw std::runtime_error("did not compile:\n" + diags);
  return r.programs[0];
}

// A program that applies every elementwise op of the table (ir/ops.h) once, one output each:
// unary ops to X, binary ones to X and a Y that broadcasts along X's rows.
inline std::string every_elementwise_op_program(const std::string& dtype = "f32") {
  std::string s = "program every_op(X: " + dtype + "[n, d], Y: " + dtype + "[d]) {\n  return ";
  bool first = true;
  for (const OpInfo& row : op_table()) {
    if (!is_elementwise(row.op) || row.op == Op::Cast) continue;  // a cast is called by its dtype (test_casts.cpp)
    s += (first ? "" : ", ") + std::string(row.name) + (row.cls == OpClass::Unary ? "(X)" : "(X, Y)");
    first = false;
  }
  return s + "\n}\n";
}

}  // namespace prism::test
