// Type rules of every op: the result dtype and symbolic shape from the operands' types, with
// numpy broadcasting for elementwise ops and batched matmul. Used by the IR builder and by every
// pass that creates values, so all of them agree on types.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/program.h"

namespace prism {

// split makes one value per part; more parts than this is rejected.
constexpr int kMaxSplitParts = 1024;

struct Inferred {
  std::optional<Type> type;
  std::string error;  // when !type: "matmul: inner dims d and n differ"
};

// Normalizes attrs in place: negative axes become >= 0 and an empty transpose perm becomes the
// explicit swap of the last two dims.
Inferred infer_type(Op op, Attrs& attrs, const std::vector<Type>& operands);

// Numpy broadcasting of two shapes; on failure returns nullopt and sets `error` to
// "dims n and d cannot broadcast".
std::optional<std::vector<Dim>> broadcast_shapes(const std::vector<Dim>& a, const std::vector<Dim>& b, std::string& error);

// The product of a shape's dims (1 for a scalar).
Dim element_count(const std::vector<Dim>& shape);

// Where a reshape of `from` to `to` that only adds unit dims puts `from`'s axes: for each axis of
// `to`, the axis of `from` it is, in order, or -1 for a unit dim added; none for any other reshape.
std::optional<std::vector<int>> unit_axes_added(const std::vector<Dim>& from, const std::vector<Dim>& to);

}  // namespace prism
