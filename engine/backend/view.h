// What the code generators of every backend share: strided views of tensors with compile-time
// shapes and strides, and the offsets of tiles in them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/program.h"
#include "engine/ir/shape.h"
#include "engine/sgraph/sgraph.h"

namespace prism::backend {

// A base-pointer expression plus shape and element strides (a box cut out of a row-major tensor,
// a dense tile, or a place in an output).
struct View {
  std::string ptr;  // expression of the first element
  std::vector<int64_t> shape, strides;
};

View dense_view(const std::string& ptr, const std::vector<int64_t>& shape);
// Strides of `v` aligned to the right of a loop nest over `shape`; broadcast dims (size 1 in v,
// or missing on the left) get stride 0.
std::vector<int64_t> aligned_strides(const View& v, const std::vector<int64_t>& shape);

// "i0*12LL + i2*3LL" over loop indices i0, i1 … ("0" when every stride is 0); `suffix` ends the
// integer literals.
std::string index_offset(const std::vector<int64_t>& strides, const std::string& suffix);

// The element offset of the (block, iteration `f`) tile of shape `tile` in a tensor with
// `strides` (data dims from `first`), as sgraph::evaluate places it: along dim j, block b of a
// grid dim partitioning j starts at b * tile[j] * (loop range if the loop walks j too), iteration
// f at f * tile[j] inside it. Block indices are named b0, b1 …; `suffix` ends integer literals
// ("L", "LL").
std::string tile_offset(const sgraph::Map& map, const std::vector<int64_t>& tile, const std::vector<int64_t>& strides,
                        size_t first, const std::string& f, int64_t loop_range, const std::string& suffix);

}  // namespace prism::backend
