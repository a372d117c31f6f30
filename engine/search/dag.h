// The fused computation a family implements, before any parallelization: a DAG of prism ops over
// whole tensors (the program's inputs first). Every block graph the search builds is one such DAG
// cut into tiles by a plan (plan.h); its value is the tiles' "abstract expression" (docs/design.md §3).
//
// Ops are the language's primitives with the block-graph conventions: binary ops and matmul take
// operands of equal rank, reductions keep their axis (size 1).
#pragma once
#include <string>
#include <vector>

#include "engine/egraph/egraph.h"
#include "engine/ir/program.h"

namespace prism::search {

struct DagValue {
  Op op = Op::Input;
  int axis = -1;              // reductions: the reduced axis (non-negative)
  std::vector<int> operands;  // indices of earlier values
  Type type;                  // f32 for ops; an input keeps its declared type
  std::string name;           // inputs: the program's parameter name
  eg::Id cls = eg::kNoId;     // the e-class in the program's saturated e-graph, when pruning
};

struct Dag {
  std::vector<DagValue> values;  // inputs, then ops in the generator's canonical order
  int num_inputs = 0;

  int num_ops() const { return int(values.size()) - num_inputs; }
  // The value no op reads (the generator only finishes DAGs with exactly one, the last).
  int sink() const { return int(values.size()) - 1; }
  // "matmul(0,1) rms@1(0) div(2,3)": identifies the DAG (the inputs are the program's).
  std::string key() const;
  // One line: "matmul, rms, div".
  std::string ops_text() const;
  // The DAG as a lowered IR program with the program's inputs and one output (the sink).
  Program to_program(const std::string& name) const;
};

bool is_reduction(Op op);  // sum, max, rms (keepdims, one axis); matmul contracts but is not one

}  // namespace prism::search
