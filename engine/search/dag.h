// The fused computation a family implements, before any parallelization: a DAG of prism ops over
// whole tensors (the program's inputs first). Every block graph the search builds is one such DAG
// cut into tiles by a plan (plan.h); its value is the tiles' "abstract expression" (docs/design.md §3).
//
// Ops are the language's primitives with the block-graph conventions: binary ops and matmul take
// operands of equal rank or a scalar, reductions keep their axis (size 1).
//
// The leaves (the first num_inputs values) are what the program reads: its inputs, each through
// the view its ops read it by (a vector broadcast against a matrix, g[d], is the leaf g viewed as
// [1, d]; transpose(W) of an input W is the leaf W viewed as W^T: a load reads it in place), and
// its scalar constants (eps, a scale, the size a mean divides by).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "engine/egraph/egraph.h"
#include "engine/egraph/tensor_lang.h"
#include "engine/ir/program.h"

namespace prism::search {

struct DagValue {
  Op op = Op::Input;          // Input, Const (leaves) or a primitive op
  int axis = -1;              // reductions: the reduced axis; split, concat: theirs (non-negative)
  std::vector<int> operands;  // indices of earlier values
  Type type;                  // f32 for ops; an input keeps its declared type
  std::string name;           // inputs: the program's parameter name
  std::vector<int> view;      // inputs: how the leaf reads the tensor (sgraph::BlockOp::view); empty: as it is
  Constant constant;          // Const leaves
  eg::Id cls = eg::kNoId;     // the e-class in the program's saturated e-graph, when pruning
  int parts = 0, index = 0;   // split: how many equal parts, and which one this is
};

// The leaves of every DAG for a lowered program: each input once, padded with leading unit dims
// to the rank of the binary ops and matmuls that read it when that is higher (as the program's
// term pads it, egraph/from_program.cpp); each transpose of an input as a transposed view, padded
// the same way (`X @ W.T` with X[b, s, d]: W viewed as [1, d, n]); each distinct scalar constant.
std::vector<DagValue> dag_leaves(const Program& program);
// The view `v` reads an input through when it is a transpose of an input or a reshape that only
// adds unit dims to an input or to a transpose of one; none otherwise.
std::optional<std::vector<int>> input_view(const Program& program, const Value& v);
// The input a value input_view reads.
const Value& viewed_input(const Program& program, const Value& v);
// A leaf's term: the input under its view (a transpose, then unsqueeze@0s), or the constant.
eg::Id leaf_term(eg::TensorGraph& tg, const DagValue& leaf);
bool is_leaf(const DagValue& v);  // Input or Const

struct Dag {
  std::vector<DagValue> values;  // inputs, then ops in the generator's canonical order
  int num_inputs = 0;
  // The values a program with several outputs returns, in return order (only the seed has
  // them); empty: the sink alone.
  std::vector<int> returned;

  int num_ops() const { return int(values.size()) - num_inputs; }
  // The value no op reads (the generator only finishes DAGs with exactly one, the last).
  int sink() const { return int(values.size()) - 1; }
  std::vector<int> outputs() const { return returned.empty() ? std::vector<int>{sink()} : returned; }
  // "matmul(0,1) rms@1(0) div(2,3)": identifies the DAG (the inputs are the program's).
  std::string key() const;
  // One line: "matmul, rms, div".
  std::string ops_text() const;
  // The DAG as a lowered IR program with the program's inputs (`inputs`: their values in
  // parameter order, each with its declared type) and its outputs.
  Program to_program(const std::string& name, const std::vector<const Value*>& inputs) const;
};

// The program itself as a DAG over `leaves` (dag_leaves(program)), whatever its length: the
// search's seed, so a program longer than the enumeration's op limit still gets the families
// that parallelize it as written. None when it uses ops or forms a DAG does not have (reshape,
// a transpose of a computed value, a reduction without keepdims, mixed ranks, a concat of more
// than two values).
std::optional<Dag> program_dag(const Program& program, const std::vector<DagValue>& leaves, std::string* why = nullptr);

// `base`, with "_" appended until no input of `program` has the name: a device tensor a family
// writes ("O", a partial's "P1"), apart from an input the user called O.
std::string unused_tensor_name(std::string base, const Program& program);
// The device tensor of the program's output k: O (one output) or O<k+1>, unused as above.
std::string output_tensor_name(const Program& program, size_t k);

bool is_reduction(Op op);  // sum, max, rms (keepdims, one axis); matmul contracts but is not one
// Split and concat: they move data along their axis, which every block then holds whole.
bool is_data_movement(Op op);
// The attrs of a DAG op in the IR's terms (axis, keepdims for reductions; parts and index).
Attrs dag_attrs(const DagValue& v);

}  // namespace prism::search
