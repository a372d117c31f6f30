// The sGraph IR: a family of fused-kernel programs with symbolic execution parameters (docs/design.md §4).
//
// An SGraph is a kernel graph: device tensors flow through a few kernels in sequence. A kernel is
// either a library kernel (one prism::Op over whole device tensors: matmul, an elementwise op, a
// reduction, or a layout copy: a reshape or transpose, between the pieces of a program cut where
// its layout changes) or a custom kernel described by a block graph:
//
//   - a grid of k dims whose sizes are Dims (normally the symbols g1..gk), and an optional for-loop
//     whose range is a Dim (normally F); every block of the grid runs the block graph once;
//   - loads: a device tensor cut into tiles by a Map (which grid dim partitions which data dim, which
//     data dim the loop walks); a tile's dim j is the tensor's dim j divided by the grid sizes and
//     the loop range mapped onto j (d / (g1*F));
//   - compute ops on tiles (prism::Op semantics with numpy broadcasting; reductions keep or drop the
//     axis as in the language);
//   - accumulators, which fold a loop-body value over the loop iterations (sum, max, or rms: sum of
//     squares along an axis, sqrt(total / count) after the loop), and the online-softmax one:
//     rescaled_sum_accumulate(x, m) folds x_f * exp(m_f - M) with M the running max of m (x_f was
//     computed relative to its iteration's max m_f; m broadcasts against x);
//   - saves, which write a tile into a new device tensor through a Map. A grid dim that the save's
//     map does not place on a data dim is a cross-block reduction: the blocks' tiles are stacked on
//     a new leading "partial" axis of that grid size (one per such grid dim, in grid order), to be
//     combined by a later kernel.
//
// Maps hold Choices, each either concrete (a data dim, or none) or a named choice variable (?a)
// that generation leaves open; concretized() makes a map (or a whole graph) concrete. A grid dim
// has one Choice per tensor, so "a grid dim partitions at most one dim of a tensor" holds by
// construction; the rest of the constraints are checked by validate.h.
//
// Block values are referred to by index into CustomKernel::ops; device tensors by name.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/dim.h"
#include "engine/ir/dtype.h"
#include "engine/ir/program.h"

namespace prism::sgraph {

// One map entry: a data dim (kNone: no data dim) or an open choice variable named var.
struct Choice {
  static constexpr int kNone = -1;
  int dim = kNone;
  std::string var;  // non-empty: symbolic; dim is then meaningless

  static Choice none() { return {}; }
  static Choice of(int d) { return {d, ""}; }
  static Choice variable(const std::string& name) { return {kNone, name}; }
  bool symbolic() const { return !var.empty(); }
  bool is_none() const { return !symbolic() && dim == kNone; }
  bool operator==(const Choice&) const = default;
};

// Values for choice variables: each a data dim index or Choice::kNone.
using ChoiceAssignment = std::map<std::string, int>;

struct Map {
  std::vector<Choice> grid;  // one per grid dim of the kernel: the data dim it partitions
  Choice loop;               // the data dim the for-loop walks

  bool is_concrete() const;
  std::vector<std::string> variables() const;  // in order of appearance, each once
  // Replaces every variable by its assigned value; throws Error{InvalidArgument} for a variable
  // without a value.
  Map concretized(const ChoiceAssignment& assignment) const;
  bool operator==(const Map&) const = default;
};

// Rescaled: sum over iterations of x_f * exp(m_f - max_f m_f) (operands x, m): the accumulator of
// online softmax, keeping a running max and rescaling what it holds whenever the max grows.
enum class AccKind { Sum, Max, Rms, Rescaled };
const char* acc_name(AccKind kind);  // "sum_accumulate" …
std::optional<AccKind> acc_from_name(const std::string& name);

struct BlockOp {
  enum class Kind { Load, Compute, Accumulate, Save };
  Kind kind = Kind::Compute;
  std::string name;           // the value it defines (Load, Compute, Accumulate); for Save: the device tensor written
  std::string tensor;         // Load: the device tensor read
  Map map;                    // Load, Save
  // Load: the dims the tile is cut from, as a view of the tensor read in place (no copy): view[i]
  // is the tensor dim that dim i reads, or kNewAxis for a unit dim the tensor lacks (a gain g[d]
  // read as [1, d] beside an [n, d] tile; W[m, d] read as W^T by view [1, 0]). Empty: the tensor's
  // own dims. Map entries name view dims.
  // Save: the tile's dims as a view of the tensor written, a permutation that keeps the last dim
  // last and no partial axis (attention's heads [h, n, e] written as rows [n, h, e], which a
  // reshape then reads in place): the tensor is laid out in its own dims, the map names view dims.
  static constexpr int kNewAxis = -1;
  std::vector<int> view;
  Op op = Op::Add;            // Compute: unary, binary, matmul, reduce (sum, max, rms), or const
                              // (a scalar: no operands, attrs.constant, a tile of rank 0)
  AccKind acc = AccKind::Sum; // Accumulate
  Attrs attrs;                // axis/keepdims for Compute reductions; axis for an Rms accumulator
  std::vector<int> operands;  // indices of earlier ops of the same kernel
  DType dtype = DType::F32;   // Save: storage type of the written tensor
};

struct CustomKernel {
  std::vector<Dim> grid;     // grid sizes, normally symbols (g1, g2)
  std::optional<Dim> loop;   // loop range, normally a symbol (F); none: no for-loop
  std::vector<BlockOp> ops;  // in a topological order

  Dim loop_range() const { return loop ? *loop : Dim(1); }
};

struct LibraryKernel {
  std::string output;               // the device tensor it defines
  DType dtype = DType::F32;
  Op op = Op::Add;
  Attrs attrs;                      // a reshape's: its shape
  std::vector<std::string> inputs;  // device tensors
  // Per input, how it is read in place (BlockOp::view: W[m, d] read as W^T by [1, 0]); empty: every
  // input as it is. A vendor matmul reads a transposed operand without a copy; a reshape reads its
  // input through a permutation (attention's heads moved back beside its rows, then merged).
  std::vector<std::vector<int>> views;

  const std::vector<int>& view(size_t i) const;  // views[i], or the identity's empty view
};

// A reshape or transpose: as a library kernel, a copy of its input in the new layout.
inline bool is_layout(Op op) { return op_class(op) == OpClass::Reshape || op_class(op) == OpClass::Transpose; }

struct Kernel {
  bool custom = false;
  LibraryKernel library;  // when !custom
  CustomKernel block;     // when custom

  // A library matmul (OpenBLAS, cuBLAS); a library kernel that sums partials is none.
  bool vendor_matmul() const { return !custom && library.op == Op::Matmul; }
};

struct TensorDecl {
  std::string name;
  Type type;
};

struct SGraph {
  std::vector<TensorDecl> inputs;    // the graph's device inputs, in parameter order
  std::vector<Kernel> kernels;       // in execution order
  std::vector<std::string> outputs;  // device tensors returned, in return order

  bool is_concrete() const;                    // every map is concrete
  std::vector<std::string> variables() const;  // every choice variable, in order of appearance
  SGraph concretized(const ChoiceAssignment& assignment) const;
  // Names of the symbols used as grid sizes and loop ranges, in order of appearance.
  std::vector<std::string> parameters() const;
  // The same with their roles, read off the kernels (a symbol in a grid size is a grid
  // parameter, one in a loop range a loop parameter), whatever the symbols are called.
  struct Parameter {
    enum class Role { Grid, Loop };
    std::string name;
    Role role = Role::Grid;
  };
  std::vector<Parameter> parameter_roles() const;
};

// The shape a load's view gives a tensor of `shape` (view_dims: the same for any per-dim values,
// such as strides, with `fill` at new axes). Throws Error{InvalidArgument} for a view that does not
// read every tensor dim exactly once, in any order, with new unit axes anywhere.
std::vector<Dim> view_shape(const std::vector<Dim>& shape, const std::vector<int>& view);
template <typename T>
std::vector<T> view_dims(const std::vector<T>& dims, const std::vector<int>& view, const T& fill) {
  if (view.empty()) return dims;
  std::vector<T> out;
  for (int a : view) out.push_back(a == BlockOp::kNewAxis ? fill : dims.at(size_t(a)));
  return out;
}
// The elements of a row-major tensor of `shape` read through `view`, in the view's row-major
// order (a copy: what the evaluator and the fingerprint load from).
template <typename T>
std::vector<T> view_elements(const std::vector<T>& data, const std::vector<int64_t>& shape, const std::vector<int>& view) {
  std::vector<int64_t> own(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) own[d - 1] = own[d] * shape[d];
  const std::vector<int64_t> out = view_dims(shape, view, int64_t(1)), strides = view_dims(own, view, int64_t(0));
  std::vector<T> result;
  result.reserve(data.size());
  std::vector<int64_t> idx(out.size(), 0);
  for (size_t e = 0; e < data.size(); ++e) {
    int64_t at = 0;
    for (size_t d = 0; d < idx.size(); ++d) at += idx[d] * strides[d];
    result.push_back(data[size_t(at)]);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return result;
}
// The permutation that undoes `view` (one without new axes): view_elements of a view's elements
// through it gives the tensor's own (a save through a view).
std::vector<int> inverse_view(const std::vector<int>& view);
// "" for the identity; else "[1, 0]", "[-, 0]" (the text form's view).
std::string view_text(const std::vector<int>& view);

// Device tensors a kernel reads / writes, in op order, each once.
std::vector<std::string> kernel_inputs(const Kernel& kernel);
std::vector<std::string> kernel_outputs(const Kernel& kernel);

// Op `i` of `kernel` is `sub(x, m)` with m a `max` of that same x: softmax's shift, on a piece of
// a row wherever a loop or a grid dim cuts the row. Every backend (and the evaluator) reads an m
// of -inf there as 0: a piece that is all -inf (a masked chunk) then stays -inf and its exp is 0,
// where -inf - -inf would be NaN; a row masked whole still divides 0 by 0, as PyTorch's softmax
// does (docs/sgraph.md, "Masked pieces").
bool shifts_by_own_max(const CustomKernel& kernel, size_t i);

}  // namespace prism::sgraph
