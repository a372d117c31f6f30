// Raises a computed value of lower rank that an elementwise op reads beside a higher-rank operand
// to that rank: its inputs read through reshapes with leading unit dims (as the search reads a
// gain vector g[d] as [1, d]), its elementwise ops on them. An inference BatchNorm's
// `(X - mu) / sqrt(var + 1e-5)` with var[d] beside rows X[n, d] becomes
// `(X - mu) / sqrt(reshape(var, [1, d]) + 1e-5)`: a fused kernel's block ops need equal ranks,
// and an input is read through any view in place. Only values computed by elementwise ops from
// inputs and scalar constants are raised; a lower-rank reduction stays as it is (the search
// refuses it). The result computes exactly what the program does, element for element.
#pragma once
#include "engine/ir/program.h"

namespace prism {

// `lowered`: a program with primitives only (lower_composites).
Program raise_ranks(const Program& lowered);

}  // namespace prism
