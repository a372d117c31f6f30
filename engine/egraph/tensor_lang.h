// The tensor term language of the e-graph and its e-class analysis (symbolic shapes, constants).
//
// Representation, and why proofs in it are sound: every term denotes one concrete tensor
// computation with numpy semantics (keepdims reductions, right-aligned broadcasting), so two
// terms in one e-class denote equal tensors. Axes are never abstracted away:
//   * a reduction names its axis: sum@i(x) sums axis i of x (size k = shape(x)[i]) and keeps it
//     as size 1 — this is the abstract expression sum(k, x), with k read off the shape analysis;
//   * a contraction is explicit: matmul(a, b) over [..., n, k] x [..., k, m] equals
//     squeeze@r-1(sum@r-1(unsqueeze@r(a) * unsqueeze@r-2(b))) — an elementwise product over
//     [..., n, k, m] summed over the k axis — so A and B keep distinct, unsqueezed axes and
//     matmul(X, W) never meets matmul(W, X);
//   * layout is explicit and exact: unsqueeze@i / squeeze@i insert / drop a size-1 axis, and
//     splitax@i$F reshapes axis i of size k into [F, k/F] (the split of sum(k) into sum(F, sum(k/F)));
//   * the parallel structure that verification adds is ordinary tensors with a leading grid axis:
//     partition@a$g(x) cuts axis a into g blocks stacked on a new axis 0, replicate$g(x) stacks g
//     copies, combine@a(y) undoes partition, reduce(y) sums the grid axis away.
// The analysis gives every class its symbolic shape; a merge of two classes with different
// shapes throws (it would be a bug in a rule), and every rule that moves a factor across a
// reduction is guarded by the shape analysis (the factor has size 1 along the reduced axis).
// Every term converts back to an IR program (to_program), which is how the tests check every
// rule against the reference interpreter.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/egraph/egraph.h"
#include "engine/ir/program.h"

namespace prism::eg {

// Term operators. Every op of the IR is the term operator of its own code (term_op), so an op the
// op table (ir/ops.h) gains is a term with no change here. The IR ops named below are the ones
// the builders and axioms name; the operators of terms alone (layout and parallel structure)
// come after the IR's codes. A concat term is binary (an IR concat of n is n - 1 of them).
// clang-format off
enum class TOp : uint8_t {
  Input = uint8_t(Op::Input), Const = uint8_t(Op::Const),
  Neg = uint8_t(Op::Neg), Exp = uint8_t(Op::Exp), Log = uint8_t(Op::Log), Sqrt = uint8_t(Op::Sqrt),
  Rsqrt = uint8_t(Op::Rsqrt), Square = uint8_t(Op::Square), Silu = uint8_t(Op::Silu), Gelu = uint8_t(Op::Gelu),
  Relu = uint8_t(Op::Relu),
  Cast = uint8_t(Op::Cast),  // a narrowing rounding only (from_program.h); payload: the DType it rounds to
  Add = uint8_t(Op::Add), Sub = uint8_t(Op::Sub), Mul = uint8_t(Op::Mul), Div = uint8_t(Op::Div),
  Matmul = uint8_t(Op::Matmul),
  Sum = uint8_t(Op::Sum), Max = uint8_t(Op::Max), Rms = uint8_t(Op::Rms),
  Transpose = uint8_t(Op::Transpose), Reshape = uint8_t(Op::Reshape), Concat = uint8_t(Op::Concat), SplitPart = uint8_t(Op::Split),
  // Terms only.
  Unsqueeze = uint8_t(kOpCount), Squeeze, SplitAx,
  Partition, Replicate, Combine, Reduce,
  Count,
};
// clang-format on

constexpr TOp term_op(Op op) { return TOp(uint8_t(op)); }
// The term operators of the op table's ops of one class, in Op order.
std::vector<TOp> term_ops(OpClass cls);
// The IR op a term operator is, if it is one.
std::optional<Op> ir_op(TOp op);

const char* top_name(TOp op);  // the name in patterns: "mul", "sum", "splitax"
uint8_t top_arity(TOp op);
bool is_unary(TOp op);   // an elementwise unary op of the IR
bool is_binary(TOp op);  // an elementwise binary op of the IR
// Pattern operator names -> codes (for Pattern / Rewrite).
bool resolve_top(const std::string& name, uint8_t& op, uint8_t& arity);

using DimId = uint32_t;
using Shape = std::vector<DimId>;

// A node source: the node behind an id (EGraph::id_node, or an extracted term's table).
using NodeAt = std::function<const ENode&(Id)>;

class TensorGraph final : public Analysis {
 public:
  TensorGraph();
  TensorGraph(const TensorGraph&) = delete;
  TensorGraph& operator=(const TensorGraph&) = delete;

  EGraph& graph() { return graph_; }
  const EGraph& graph() const { return graph_; }

  // Interned attributes.
  DimId dim_id(const Dim& d);
  const Dim& dim(DimId id) const { return dims_[id]; }
  DimId one() const { return 0; }
  uint32_t shape_id(const Shape& s);

  // Node builders (add to the e-graph; throw std::logic_error for ill-shaped terms).
  Id input(const std::string& name, const std::vector<Dim>& shape);
  // A float constant that is a short dyadic rational (0.125, 0.5, 3.0) is interned as that exact
  // rational, so `x * 0.125` and `x / 8` (x * 1/8) meet; others (1e-06) stay floats.
  Id constant(const Constant& c);
  Id op(TOp op, const std::vector<Id>& kids, int axis = 0, uint32_t payload = 0);
  Id splitax(int axis, const Dim& factor, Id x) { return op(TOp::SplitAx, {x}, axis, dim_id(factor)); }
  Id transpose(const std::vector<int>& perm, Id x);
  Id reshape(const std::vector<Dim>& shape, Id x);
  Id split_part(int axis, int parts, int index, Id x) { return op(TOp::SplitPart, {x}, axis, uint32_t(parts) << 16 | uint32_t(index)); }

  // Analysis queries on any id (its class).
  const Shape& shape_of(Id id) const { return shapes_[data_[graph_.find(id)].shape]; }
  size_t rank(Id id) const { return shape_of(id).size(); }
  // The size of `axis` of `id`'s tensor, reading missing leading axes as 1 (broadcasting).
  DimId dim_at(Id id, int axis, size_t out_rank) const;
  DimId dim_at(Id id, int axis) const { return dim_at(id, axis, rank(id)); }
  std::vector<Dim> dims_of(Id id) const;
  bool is_const(Id id) const { return data_[graph_.find(id)].constant >= 0; }
  // The constant a class holds (a Const node in it), or null.
  const Constant* constant_of(Id id) const {
    const int32_t c = data_[graph_.find(id)].constant;
    return c < 0 ? nullptr : &consts_[size_t(c)];
  }
  // Split factors seen in the e-graph: (size k, factor F) for every splitax of an axis of size k.
  const std::vector<std::pair<DimId, DimId>>& split_pairs() const { return split_pairs_; }

  // Text of the term behind `id` as added (term syntax, e.g. "sum(d@1, X * W)"), cut at max_len.
  std::string print(Id id, size_t max_len = 4000) const { return print(id, [this](Id i) -> const ENode& { return graph_.id_node(i); }, max_len); }
  std::string print(Id id, const NodeAt& at, size_t max_len = 4000) const;
  // The term as an IR program (f32, primitives only) whose inputs are the term's Input leaves
  // plus, for replicate, a tensor of ones named "__ones_<g>" per grid size.
  Program to_program(const std::vector<Id>& outputs, const NodeAt& at) const;
  Program to_program(const std::vector<Id>& outputs) const {
    return to_program(outputs, [this](Id i) -> const ENode& { return graph_.id_node(i); });
  }

  struct InputInfo {
    std::string name;
    uint32_t shape;
  };
  const InputInfo& input_info(uint32_t payload) const { return inputs_[payload]; }
  const Constant& constant_info(uint32_t payload) const { return consts_[payload]; }
  const std::vector<int>& perm_info(uint32_t payload) const { return perms_[payload]; }
  const Shape& shape_info(uint32_t id) const { return shapes_[id]; }

  // Analysis.
  void make(const EGraph& g, Id cls, const ENode& node) override;
  MergeResult merge(Id into, Id from) override;
  bool update(const EGraph& g, Id cls, const ENode& node) override;

 private:
  struct Data {
    uint32_t shape = 0;
    int32_t constant = -1;  // payload of a Const node in the class, if any
  };
  Shape infer(const ENode& n) const;
  std::string shape_text(uint32_t shape) const;

  EGraph graph_;
  std::vector<Data> data_;
  std::vector<Dim> dims_;
  std::map<std::string, DimId> dim_ids_;
  std::vector<Shape> shapes_;
  std::map<Shape, uint32_t> shape_ids_;
  std::vector<InputInfo> inputs_;
  std::map<std::pair<std::string, uint32_t>, uint32_t> input_ids_;
  std::vector<Constant> consts_;
  std::map<std::string, uint32_t> const_ids_;
  std::vector<std::vector<int>> perms_;
  std::map<std::vector<int>, uint32_t> perm_ids_;
  std::vector<std::pair<DimId, DimId>> split_pairs_;
};

}  // namespace prism::eg
