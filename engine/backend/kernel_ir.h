// The kernel IR: an instantiated sGraph lowered once for every backend (lower.h) and printed by
// each (cpu/codegen.h as C++ with OpenMP, cuda/codegen.h as CUDA C++). It says what every block
// computes, in which order, and where every value lives; a printer decides only how a statement
// becomes code (loop nests or loops spread over threads, registers or tensor cores).
//
//   - A program: the device tensors (the inputs in parameter order, then what the kernels write,
//     in kernel order), the returned ones, and the kernels in order.
//   - A custom kernel: a grid (one block per point, block indices b0, b1 …) and a loop (index f).
//     Its block values (the sGraph kernel's ops, by index) live in places: a tile of block-local
//     fast memory (a CPU thread's scratch, a GPU block's shared memory), a box of a device tensor
//     (a load read where it lies, a value written straight into its save), or an accumulator's
//     tile that a matmul adds into. Its statements come in three phases: before the loop (what
//     does not change with f), the loop body, after the loop. Accumulators are set before the
//     phases and, for rms, finished between the body and after. A rescaled accumulator has three
//     more tiles (its running max, an accumulator of its own, and two factor tiles) whose values
//     are numbered after the kernel's ops.
//   - A library kernel: one op over whole device tensors.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/dtype.h"
#include "engine/ir/ops.h"
#include "engine/ir/shape.h"
#include "engine/sgraph/sgraph.h"

namespace prism::backend::kir {

// One term of an element offset: scale * b<block>, or scale * f for the loop index (block -1).
struct Term {
  int block = -1;
  int64_t scale = 0;
};
// An offset affine in the block and loop indices: its terms in the order the lowering added them.
using Offset = std::vector<Term>;

// Where a value lives, with its shape and element strides there.
struct Place {
  enum class Kind {
    Tile,    // the tile of block value `value`: dense, in block-local memory
    Tensor,  // the box of device tensor `tensor` at `offset`
    Bound,   // block value `value`, bound to a box of a tensor it is read in (Stmt::Kind::Bind)
  };
  Kind kind = Kind::Tile;
  int value = -1;
  std::string tensor;
  Offset offset;
  std::vector<int64_t> shape, strides;
  int64_t start = 0;  // elements from where the tile or box begins (a split part read in place)
};

struct Stmt {
  enum class Kind {
    Bind,        // block value `value` is read where it lies: the tensor box `out` (no copy)
    Stage,       // copy the tensor box in[0] into the tile `out` (a load into fast memory)
    Compute,     // out = op(in…): elementwise with broadcasting, matmul, a reduction along `axis`,
                 // or a concat along `axis` (in[0] then in[1]; a split part is no statement: its
                 // place is part of its operand's)
    Accumulate,  // the accumulator `out` folds in[0]: sum, max, or the sum of squares along `axis`;
                 // rescaled: in = {x, m, running max, keep, take} (the last three tiles of m's
                 // shape): keep = rescale(max, m), take = rescale(m, max), max = max(max, m),
                 // out = out * keep + x * take, with rescale(a, b) = a == -inf ? 0 : exp(a - max(a, b))
    Save,        // copy in[0] into the tensor box `out`
  };
  Kind kind = Kind::Compute;
  int value = -1;                              // the sGraph block op it comes from (-1 in a library kernel)
  std::string name;                            // the value it defines, or the tensor a save writes
  std::string label;                           // the op, for a comment: "w = load W", "xw = matmul", "save O"
  Op op = Op::Add;                             // Compute (Const: out = `constant`, a tile of one element)
  double constant = 0;                         // Const: its value at the instance's dims
  sgraph::AccKind acc = sgraph::AccKind::Sum;  // Accumulate
  int axis = 0;                                // a reduction's, split's, concat's or rms accumulator's axis, normalized
  bool keepdims = true;                        // a reduction's
  bool into_accumulator = false;               // a matmul whose `out` is an accumulator's tile: out += a @ b
  bool squares = false;                        // a sum of in[0]'s squares (set by the CPU's cpu/fuse_squares.h only)
  bool finite_shift = false;                   // a sub whose in[1] of -inf reads as 0 (sgraph::shifts_by_own_max)
  std::vector<Place> in;
  Place out;
  // A matmul of the loop body that reads a loaded B: the B the next such matmul reads (for the
  // last one, the first one's in the next iteration: `next_iteration`), for prefetching.
  std::optional<Place> next_b;
  bool next_iteration = false;
};

struct Tile {
  int value = -1;              // the block value it holds
  std::string name;            // its name
  DType storage = DType::F32;  // f32 for computed tiles and accumulators; a staged load's its tensor's
  std::vector<int64_t> shape;
  int64_t offset_bytes = 0;  // in the block's fast memory
};

struct Accumulator {
  int value = -1;
  std::string name;
  sgraph::AccKind acc = sgraph::AccKind::Sum;
  int64_t elements = 0;
  int64_t count = 0;  // rms: the elements each result folds over all iterations (the finish divides by it)
};

struct CustomKernel {
  std::vector<int64_t> grid;  // sizes
  int64_t loop = 1;           // range
  std::vector<Tile> tiles;    // in layout order
  int64_t fast_memory_bytes = 0;
  std::vector<Accumulator> accumulators;  // in op order
  std::vector<Stmt> before, body, after;
  int64_t blocks() const;
};

struct Kernel {
  bool custom = false;
  CustomKernel block;                      // when custom
  Stmt library;                            // when not: a Compute over whole tensors
  std::vector<std::string> reads, writes;  // device tensors, as sgraph::kernel_inputs / kernel_outputs
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;

  int64_t bytes() const { return element_count(shape) * dtype_bytes(dtype); }  // stored at its dtype
};

struct Program {
  std::vector<Tensor> tensors;  // inputs first, in parameter order; then written, in kernel order
  size_t inputs = 0;
  std::vector<std::string> outputs;  // returned, in return order
  std::vector<Kernel> kernels;

  size_t index(const std::string& tensor) const;  // throws Error{InvalidArgument} for an unknown name
  const Tensor& tensor(const std::string& name) const { return tensors[index(name)]; }
};

// The device tensors `kernel` reads or writes, by index, in index order, each once.
std::vector<size_t> kernel_tensors(const Program& program, const Kernel& kernel);
// The element type of every block value of `kernel` that lives in a tile (its storage) or is read
// where it lies (its tensor's dtype), by value.
std::map<int, DType> block_value_dtypes(const Program& program, const CustomKernel& kernel);

}  // namespace prism::backend::kir
