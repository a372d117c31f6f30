// The dtype each output is checked at (docs/tuning.md, "Outputs of mixed dtypes"). An output's
// value is as precise as the coarsest value computed on its way: an f32 residual plus a matmul
// autocast ran at bf16 carries the bf16 matmul's rounding, which a fused kernel that keeps f32
// intermediates does differently from the reference that rounds each one. Inputs hold their
// values exactly and count for nothing; every computed value, the output included, counts.
#pragma once
#include <vector>

#include "engine/ir/program.h"

namespace prism {

// Per output of `p`, in return order: the coarsest dtype (dtype.h's `coarser`) among the output
// and the values it is computed from, inputs and constants aside.
std::vector<DType> checked_dtypes(const Program& p);

}  // namespace prism
