// Shape arithmetic on concrete shapes, shared by every pass that binds dims: the interpreter, the
// fingerprint, instantiation, the cost model and the code generators. Shapes are row-major; a
// broadcast aligns shapes on the right, as NumPy does.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/dim.h"

namespace prism {

// Every dim as a concrete size; throws Error{InvalidArgument} naming a dim that the bindings do
// not make a positive integer.
std::vector<int64_t> concrete_shape(const std::vector<Dim>& shape, const DimBindings& bindings);

// The product of the dims (1 for a scalar); no overflow check.
int64_t element_count(const std::vector<int64_t>& shape);
// Row-major element strides of a dense tensor of `shape`.
std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape);
// The strides of a dense `shape` aligned right against a broadcast result `out`: a dim of size 1
// against a larger one, or a missing one, gets stride 0.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& shape, const std::vector<int64_t>& out);
// The NumPy broadcast of two shapes, or none when a pair of dims differs and neither is 1.
std::optional<std::vector<int64_t>> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

std::string shape_text(const std::vector<int64_t>& shape);  // "(8, 4096)"

}  // namespace prism
