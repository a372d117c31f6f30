// Retyping a program or a family to one storage dtype: what a test or a tool uses to look at a
// layer as if every tensor were declared f32 (backends store tensors at their declared dtypes).
#pragma once
#include "engine/ir/program.h"
#include "engine/sgraph/sgraph.h"

namespace prism::backend {

// Every non-weak value (inputs, ops) gets `dtype`; weak scalar constants keep adopting.
Program with_storage(Program program, DType dtype);
// Inputs, saves and library kernels get `dtype` (tiles are f32 in any case).
sgraph::SGraph with_storage(sgraph::SGraph graph, DType dtype);

}  // namespace prism::backend
