// The one walk over a kernel statement's kinds that every printer shares (kernel_ir.h): which
// kind, op class or accumulator a statement is and the places it reads, as the printer's views;
// the printer says how each prints. A backend's printer is a class with
//
//   View view(const kir::Place& place, const std::string& f) const;   // f: the loop index's text
//   std::string stage(s, x, out, ctx), save(x, out, ctx), bound(),
//               unary(s, x, out, ctx), binary(s, a, b, out, ctx), matmul(s, a, b, out, ctx),
//               constant(s, out, ctx), concat(s, ins, out, ctx), reduce(s, x, out, ctx),
//               accumulate_sum(x, out, ctx), accumulate_max(x, out, ctx),
//               accumulate_rms(s, x, out, ctx), rescaled(x, m, run, keep, take, out, ctx);
//
// (views by const reference, `s` the statement, `ctx` the printer's context), which the walk calls
// with `out`'s view taken first, as every printer did.
#pragma once
#include <string>
#include <vector>

#include "engine/backend/kernel_ir.h"
#include "engine/ir/ops.h"

namespace prism::backend {

template <class Printer, class Context>
std::string walk_statement(Printer& p, const kir::Stmt& s, const Context& ctx, const std::string& f) {
  auto in = [&](size_t k) { return p.view(s.in.at(k), f); };
  const auto out = p.view(s.out, f);
  switch (s.kind) {
    case kir::Stmt::Kind::Stage: return p.stage(s, in(0), out, ctx);
    case kir::Stmt::Kind::Compute:
      switch (op_class(s.op)) {
        case OpClass::Unary: return p.unary(s, in(0), out, ctx);
        case OpClass::Binary: return p.binary(s, in(0), in(1), out, ctx);
        case OpClass::Matmul: return p.matmul(s, in(0), in(1), out, ctx);
        case OpClass::Const: return p.constant(s, out, ctx);
        case OpClass::Concat: {  // (a split is read in place: lower.cpp)
          std::vector<decltype(in(0))> ins;
          for (size_t k = 0; k < s.in.size(); ++k) ins.push_back(in(k));
          return p.concat(s, ins, out, ctx);
        }
        default: return p.reduce(s, in(0), out, ctx);
      }
    case kir::Stmt::Kind::Accumulate:
      switch (s.acc) {
        case sgraph::AccKind::Sum: return p.accumulate_sum(in(0), out, ctx);
        case sgraph::AccKind::Max: return p.accumulate_max(in(0), out, ctx);
        case sgraph::AccKind::Rms: return p.accumulate_rms(s, in(0), out, ctx);
        case sgraph::AccKind::Rescaled: return p.rescaled(in(0), in(1), in(2), in(3), in(4), out, ctx);
      }
      return "";
    case kir::Stmt::Kind::Save: return p.save(in(0), out, ctx);
    case kir::Stmt::Kind::Bind: break;
  }
  return p.bound();
}

}  // namespace prism::backend
