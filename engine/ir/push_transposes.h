// Moves every transpose of a computed value down to the program's inputs, so that what a fused
// kernel reads transposed is an input (a load through a transposed view) and what it computes has
// no transpose in it. QK-norm attention transposes its normed keys,
// `transpose(rms_norm(K) * gk)`, which becomes `rms_norm'(transpose(K)) * reshape(gk, [1, e, 1])`:
//
//   transpose(u(x))          = u(transpose(x))                       (elementwise unary)
//   transpose(a op b)        = transpose(a) op transpose(b)           (a scalar stays as it is)
//   transpose(reduce@k(x))   = reduce@j(transpose(x)), perm[j] = k   (keepdims)
//   transpose(input)         stays; an input of lower rank read with leading unit dims becomes
//                            the reshape that puts its dims where the transpose does, when their
//                            order is kept (a vector g[e] under [0, 2, 1]: reshape(g, [1, e, 1]))
//
// A transpose of a transpose is first one transpose, by the composed perm (a key's head split read
// as `.mT`: [0, 2, 1, 3] then [0, 1, 3, 2] is [0, 2, 3, 1], one view of an input or of a kernel
// cut's boundary); two that cancel are their operand.
//
// A transpose of a reshape that only adds unit dims to an input is that reshape of the input's
// transpose (grouped attention's keys at [b, k, 1, s, e], read as `.mT`): a load reads it through
// one view, as the search's leaves build it.
//
// A transpose whose operand reaches anything else (a matmul, a reshape, a reduction without
// keepdims, a lower-rank computed value) is left as it is. Values only the moved transposes read
// are dropped. The result computes exactly what the program does, element for element.
#pragma once
#include "engine/ir/program.h"

namespace prism {

// `lowered`: a program with primitives only (lower_composites).
Program push_transposes(const Program& lowered);

}  // namespace prism
