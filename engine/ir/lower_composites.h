// The one place that defines the composites in terms of primitives:
//   mean(x, axis)       = sum(x, axis) / k          (k: the reduced dim, a symbolic constant)
//   rms_norm(x)         = x / rms(x, axis=-1)
//   rms_norm(x, eps=e)  = x / sqrt(mean(x*x, axis=-1) + e)
//   softmax(x, axis)    = exp(x) / sum(exp(x), axis)
// rms stays a primitive reduction (rms(x) = sqrt(mean(x*x))): the e-graph uses rms(k, x) as an op.
#pragma once
#include "engine/ir/program.h"

namespace prism {

// Returns the program with every composite replaced by primitives. The value a composite computed
// keeps its name, type and position; the intermediate values get fresh names (t0, t1, …).
Program lower_composites(const Program& program);

}  // namespace prism
