// What the printers of every backend share: strided views of tensors with compile-time shapes and
// strides (a place of the kernel IR, printed), index expressions over them, and folds along an axis.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/dtype.h"
#include "engine/ir/shape.h"

namespace prism::backend {

// A base-pointer expression plus shape and element strides (a box cut out of a row-major tensor,
// a dense tile, or a place in an output).
struct View {
  std::string ptr;  // expression of the first element
  std::vector<int64_t> shape, strides;
  DType dtype = DType::F32;  // what its elements are stored as
};

// v from `elements` elements on (the same shape and strides).
View shifted(const View& v, int64_t elements);
// v without its leading dims of size 1, down to two (a block's batch of one as a matrix).
View matrix_of(View v);
// The box of v that spans [start, start + size) along `axis` (a split part, or where one operand
// of a concat goes): the same strides from a shifted first element.
View part_of(const View& v, int axis, int64_t start, int64_t size);
// A concat's copies along `axis`, as (from, to) views: each of ins into its part of out.
std::vector<std::pair<View, View>> concat_moves(int axis, const std::vector<View>& ins, const View& out);
// Strides of `v` aligned to the right of a loop nest over `shape`; broadcast dims (size 1 in v,
// or missing on the left) get stride 0.
std::vector<int64_t> aligned_strides(const View& v, const std::vector<int64_t>& shape);

// "i0*12LL + i2*3LL" over loop indices i0, i1 … ("0" when every stride is 0); `suffix` ends the
// integer literals.
std::string index_offset(const std::vector<int64_t>& strides, const std::string& suffix);

// A fold of view x along `axis` into view out (a reduction, or an accumulator that folds): the
// loop over its results is x's shape with the axis at 1; each result folds `k` elements `step`
// apart in x. Both views' strides are aligned to the loop (a result that dropped the axis gets it
// back at size 1).
struct Fold {
  std::vector<int64_t> shape;
  int64_t k = 0, step = 0;
  std::vector<int64_t> x_strides, out_strides;
};
Fold fold_over(int axis, const View& x, const View& out);

}  // namespace prism::backend
