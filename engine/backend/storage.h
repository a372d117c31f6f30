// Retyping for a backend's storage type: the CPU backend stores every tensor as f32, so the
// program it is checked against and the families it compiles are retyped the same way.
#pragma once
#include "engine/ir/program.h"
#include "engine/sgraph/sgraph.h"

namespace prism::backend {

// Every non-weak value (inputs, ops) gets `dtype`; weak scalar constants keep adopting.
Program with_storage(Program program, DType dtype);
// Inputs, saves and library kernels get `dtype` (tiles are f32 in any case).
sgraph::SGraph with_storage(sgraph::SGraph graph, DType dtype);

}  // namespace prism::backend
