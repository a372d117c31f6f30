// The numeric evaluator of an instantiated sGraph: the ground truth for what a family computes,
// before any backend exists. It literally simulates the kernel graph on the CPU:
//
//   - a library kernel runs its op through the reference interpreter (engine/interp), so its
//     result is rounded to the kernel's dtype exactly as there;
//   - a custom kernel runs every block of its grid, one after the other; in each block it runs the
//     loop-invariant ops once, then the loop body once per iteration (loads cut the iteration's
//     tile, accumulators fold), then the ops after the loop. Tiles are f32 and never rounded
//     inside the kernel; block ops use the interpreter's formulas (one op at a time). A save
//     writes its tile where its map says (a cross-block reduction's partials on the leading
//     partial axes), and the saved tensor is rounded to its dtype when the kernel ends.
//
// Layout of a data dim that a grid dim and the loop both split: block b owns the contiguous chunk
// b of S/g, and iteration f takes tile f inside it (offset (b*F + f) * tile).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/cancel.h"
#include "engine/interp/tensor.h"
#include "engine/sgraph/instantiate.h"

namespace prism::sgraph {

// `inputs` maps each graph input to its tensor (converted to the declared dtype when it differs).
// Returns the graph outputs in order. Throws Error{InvalidArgument} for a missing input or a shape
// mismatch, Error{Cancelled}.
std::vector<Tensor> evaluate(const Instance& instance, const std::map<std::string, Tensor>& inputs, const CancelToken* cancel = nullptr);

}  // namespace prism::sgraph
