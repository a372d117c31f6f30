// The argument list of every callable op: what the language binds a call's arguments to
// (build_ir.cpp), and what editors show (hover, completion and signature help print
// op_signature). One table, so the help can never disagree with the checker.
#pragma once
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/ops.h"

namespace prism {

enum class ArgKind { Tensor, Int, Bool, Number, IntList, DimList };

struct ParamSpec {
  const char* name;
  ArgKind kind;
  bool required;
  const char* fallback;  // what an optional argument means when absent, as the language writes it
};

// Concat's tensors are variadic and not listed: its only parameter here is `axis`.
std::vector<ParamSpec> op_params(Op op);

// The call as a user writes it, with the defaults: "sum(x, axis=-1, keepdims=true)",
// "concat(x, ..., axis=-1)".
std::string op_signature(Op op);

// Where each parameter's text lies in op_signature(op): byte offsets [begin, end) of "x",
// "axis=-1", … (for concat: "x", "...", "axis=-1"), in order.
std::vector<std::pair<size_t, size_t>> op_signature_params(Op op);

// One line on what the op computes: the C formula of an elementwise op, the rule of the others.
std::string op_summary(Op op);

// The calls the language writes with its ops, as PyTorch spells them (build_ir.cpp lowers them).
struct SpelledCall {
  const char* name;
  const char* signature;
  const char* summary;
};
std::span<const SpelledCall> spelled_calls();

// Every call and operator a program can write, as (signature, summary) rows for `help ops`: the
// op table's callable ops, the casts, the spelled calls, then the operators.
std::vector<std::pair<std::string, std::string>> language_reference();

}  // namespace prism
