// The eager baseline's plan: a lowered program at concrete dims as one step per op over whole
// tensors, as PyTorch's eager mode runs it, for the "candidate vs eager" column of every report.
// Both backends print the same plan: the CPU as OpenMP loop nests with OpenBLAS for matmul
// (cpu/eager.h), the GPU as a kernel per step with cuBLAS for matmul (cuda/eager.h). Elementwise
// formulas and reduction orders are the reference interpreter's.
//
// Every op but matmul and a reduction is a gather over an index space: each index (i0, i1, …) of
// `shape` reads its operands at offset + Σ i_d * strides[d] and writes the result likewise. That
// covers elementwise ops with broadcasting (strides 0), transpose (permuted strides), concat and
// split (boxes at an offset) and copying an output into its slot. A reshape is a view: its value
// is its operand's buffer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/dtype.h"
#include "engine/ir/program.h"

namespace prism::backend::eager {

struct Buffer {
  enum class Role { Input, Output, Scratch };
  Role role = Role::Scratch;
  size_t slot = 0;   // the input's parameter index, the output's return slot, or the scratch number
  int value = -1;    // the program value it holds first
  std::string name;  // that value's name
  int64_t elements = 0;
  DType dtype = DType::F32;
};

// An operand or a result of a gather: element offset + Σ i_d * strides[d] of a buffer, or a
// scalar constant (buffer -1).
struct Access {
  int buffer = -1;
  float constant = 0;
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

struct Step {
  enum class Kind {
    Gather,  // out = op(in…) at every index of `shape` (op: an elementwise op; no op: a copy of in[0])
    Matmul,  // out[b] = in[0][b] @ in[1][b] for every b of `shape` (the batch), batch strides per operand
    Reduce,  // out[o, i] = fold of in[0][o, j, i] over j < k, for o < outer, i < inner
  };
  Kind kind = Kind::Gather;
  std::string what;          // for names and comments: the op's name, "copy", "transpose", "concat", "split"
  std::string value;         // the program value it computes (an output copy: the output's)
  bool elementwise = false;  // a Gather computing `op` (else a copy)
  Op op = Op::Add;
  std::vector<Access> in;
  Access out;
  std::vector<int64_t> shape;   // Gather: the index space; Matmul: the batch
  int64_t m = 0, n = 0, k = 0;  // Matmul: each batch element's sizes; Reduce: k, with outer and inner
  // Matmul: the operand is stored with its last two dims swapped (`transpose(W)` of an nn.Linear
  // weight), read as a GEMM reads a transposed operand, with no copy, as PyTorch's F.linear does.
  bool trans_a = false, trans_b = false;
  int64_t outer = 0, inner = 0;
};

struct Plan {
  std::vector<Buffer> buffers;  // inputs in parameter order, outputs in return order, then scratch in step order
  std::vector<Step> steps;
  size_t inputs = 0, outputs = 0;
};

// Throws Error{InvalidArgument} for a dim the bindings do not make a positive integer,
// Error{Failed} for an op that is not a primitive (a composite: lower_composites first).
Plan plan(const Program& lowered, const DimBindings& bindings);

// What a reduction folds with, in C: the start value, the update of `acc` by `x` (max propagates
// NaN), the result from `acc` (rms: sqrt(acc / k)), with `isnan`, `sqrt` and infinity spelled as
// the dialect does.
struct FoldText {
  std::string init, update, result;
};
struct FoldDialect {
  const char* isnan;  // "std::isnan", "isnan"
  const char* sqrt;   // "std::sqrt", "sqrtf"
  const char* minus_infinity;
};
FoldText fold_text(Op op, int64_t k, const FoldDialect& dialect);

// An exact C float literal (hexadecimal), or the dialect's expression for an infinity or a NaN.
std::string float_literal(float x, const char* nan, const char* infinity);

}  // namespace prism::backend::eager
