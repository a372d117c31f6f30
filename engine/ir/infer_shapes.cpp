#include "engine/ir/infer_shapes.h"

#include <algorithm>

namespace prism {

namespace {

Inferred fail(Op op, const std::string& message) { return {std::nullopt, std::string(op_name(op)) + ": " + message}; }

// Maps axis in [-rank, rank) to [0, rank); false when out of range.
bool normalize_axis(int& axis, size_t rank) {
  int r = int(rank);
  if (axis < -r || axis >= r) return false;
  if (axis < 0) axis += r;
  return true;
}

std::string axis_error(int axis, size_t rank) {
  return "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank);
}

DType combine_dtype(const Type& a, const Type& b) {
  if (a.weak && !b.weak) return b.dtype;
  if (b.weak && !a.weak) return a.dtype;
  return wider(a.dtype, b.dtype);
}

Inferred infer_matmul(const Type& a, const Type& b) {
  for (int i = 0; i < 2; ++i) {
    const Type& t = i == 0 ? a : b;
    if (t.shape.size() < 2)
      return fail(Op::Matmul, "operand " + std::to_string(i + 1) + " has rank " + std::to_string(t.shape.size()) +
                                  " but matmul needs rank 2 or more");
  }
  const Dim& k1 = a.shape[a.shape.size() - 1];
  const Dim& k2 = b.shape[b.shape.size() - 2];
  if (k1 != k2) return fail(Op::Matmul, "inner dims " + k1.str() + " and " + k2.str() + " differ");
  std::string error;
  std::vector<Dim> batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  auto batch = broadcast_shapes(batch_a, batch_b, error);
  if (!batch) return fail(Op::Matmul, "batch " + error);
  Type out{combine_dtype(a, b), *batch, false};
  out.shape.push_back(a.shape[a.shape.size() - 2]);
  out.shape.push_back(b.shape.back());
  return {out, ""};
}

Inferred infer_reshape(const Type& x, const Attrs& attrs) {
  for (const Dim& d : attrs.shape) {
    auto c = d.constant_value();
    if (c && !(c->is_integer() && c->num() > 0)) return fail(Op::Reshape, "dim " + d.str() + " is not a positive integer");
  }
  Dim from = element_count(x.shape), to = element_count(attrs.shape);
  if (from != to) {
    // Decidable only when the ratio is a number: then the counts differ for every binding.
    // Otherwise (n*d vs m*k) the interpreter checks the counts once dims are bound.
    auto ratio = (from / to).constant_value();
    if (ratio && *ratio != Rational(1))
      return fail(Op::Reshape, "cannot reshape " + shape_str(x.shape) + " (" + from.str() + " elements) into " +
                                   shape_str(attrs.shape) + " (" + to.str() + " elements)");
  }
  return {Type{x.dtype, attrs.shape, false}, ""};
}

Inferred infer_concat(const std::vector<Type>& xs, Attrs& attrs) {
  if (xs.size() < 2) return fail(Op::Concat, "needs at least 2 tensors but got " + std::to_string(xs.size()));
  size_t rank = xs[0].shape.size();
  int written_axis = attrs.axis;
  for (size_t i = 1; i < xs.size(); ++i)
    if (xs[i].shape.size() != rank)
      return fail(Op::Concat, "operand " + std::to_string(i + 1) + " has rank " + std::to_string(xs[i].shape.size()) +
                                  " but operand 1 has rank " + std::to_string(rank));
  if (!normalize_axis(attrs.axis, rank)) return fail(Op::Concat, axis_error(written_axis, rank));
  Type out = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    for (size_t d = 0; d < rank; ++d) {
      if (int(d) == attrs.axis) continue;
      if (xs[i].shape[d] != out.shape[d])
        return fail(Op::Concat, "dims " + out.shape[d].str() + " and " + xs[i].shape[d].str() + " differ on axis " +
                                    std::to_string(d));
    }
    out.shape[size_t(attrs.axis)] = out.shape[size_t(attrs.axis)] + xs[i].shape[size_t(attrs.axis)];
    out.dtype = combine_dtype(out, xs[i]);
    out.weak = out.weak && xs[i].weak;
  }
  return {out, ""};
}

Inferred infer_split(const Type& x, Attrs& attrs) {
  if (attrs.parts < 1) return fail(Op::Split, "parts must be positive but is " + std::to_string(attrs.parts));
  if (attrs.parts > kMaxSplitParts)
    return fail(Op::Split, std::to_string(attrs.parts) + " parts is more than the limit of " + std::to_string(kMaxSplitParts));
  int written_axis = attrs.axis;
  if (!normalize_axis(attrs.axis, x.shape.size())) return fail(Op::Split, axis_error(written_axis, x.shape.size()));
  if (attrs.index < 0 || attrs.index >= attrs.parts) return fail(Op::Split, "part index out of range");
  const Dim& d = x.shape[size_t(attrs.axis)];
  Dim part = d / Dim(attrs.parts);
  auto c = part.constant_value();
  if (c && !c->is_integer())
    return fail(Op::Split, "dim " + d.str() + " is not divisible into " + std::to_string(attrs.parts) + " parts");
  Type out = x;
  out.shape[size_t(attrs.axis)] = part;
  return {out, ""};
}

Inferred infer_transpose(const Type& x, Attrs& attrs) {
  size_t rank = x.shape.size();
  if (attrs.perm.empty()) {
    if (rank < 2) return fail(Op::Transpose, "needs rank 2 or more but got rank " + std::to_string(rank));
    for (size_t i = 0; i < rank; ++i) attrs.perm.push_back(int(i));
    std::swap(attrs.perm[rank - 1], attrs.perm[rank - 2]);
  }
  if (attrs.perm.size() != rank)
    return fail(Op::Transpose, "perm has " + std::to_string(attrs.perm.size()) + " entries for rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int& p : attrs.perm) {
    int written = p;
    if (!normalize_axis(p, rank) || seen[size_t(p)])
      return fail(Op::Transpose, "perm is not a permutation of 0.." + std::to_string(rank - 1) + " (entry " +
                                     std::to_string(written) + ")");
    seen[size_t(p)] = true;
  }
  Type out = x;
  for (size_t i = 0; i < rank; ++i) out.shape[i] = x.shape[size_t(attrs.perm[i])];
  return {out, ""};
}

Inferred infer_reduce(Op op, const Type& x, Attrs& attrs) {
  int written_axis = attrs.axis;
  if (!normalize_axis(attrs.axis, x.shape.size())) return fail(op, axis_error(written_axis, x.shape.size()));
  Type out = x;
  if (attrs.keepdims) out.shape[size_t(attrs.axis)] = Dim(1);
  else out.shape.erase(out.shape.begin() + attrs.axis);
  return {out, ""};
}

}  // namespace

std::optional<std::vector<Dim>> broadcast_shapes(const std::vector<Dim>& a, const std::vector<Dim>& b, std::string& error) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right, as numpy does; a missing dim acts as 1.
    const Dim* da = i < a.size() ? &a[a.size() - 1 - i] : nullptr;
    const Dim* db = i < b.size() ? &b[b.size() - 1 - i] : nullptr;
    Dim& o = out[rank - 1 - i];
    if (!da) o = *db;
    else if (!db) o = *da;
    else if (*da == *db) o = *da;
    else if (*da == Dim(1)) o = *db;
    else if (*db == Dim(1)) o = *da;
    else {
      error = "dims " + da->str() + " and " + db->str() + " cannot broadcast";
      return std::nullopt;
    }
  }
  return out;
}

Dim element_count(const std::vector<Dim>& shape) {
  Dim n(1);
  for (const Dim& d : shape) n = n * d;
  return n;
}

std::optional<std::vector<int>> unit_axes_added(const std::vector<Dim>& from, const std::vector<Dim>& to) {
  std::vector<int> axes;
  size_t next = 0;
  for (const Dim& d : to) {
    if (next < from.size() && d == from[next]) axes.push_back(int(next++));
    else if (d == Dim(1)) axes.push_back(-1);
    else return std::nullopt;
  }
  if (next != from.size()) return std::nullopt;
  return axes;
}

Inferred infer_type(Op op, Attrs& attrs, const std::vector<Type>& xs) {
  auto need = [&](size_t n) { return xs.size() == n; };
  try {
    switch (op_class(op)) {
      case OpClass::Input:
        return fail(op, "inputs take their type from the parameter list");
      case OpClass::Const:
        return {Type{DType::F32, {}, true}, ""};
      case OpClass::Unary:
        if (!need(1)) break;
        if (op == Op::Cast) {
          if (!attrs.dtype) return fail(op, "no dtype to cast to");
          return {Type{*attrs.dtype, xs[0].shape, false}, ""};
        }
        return {xs[0], ""};
      case OpClass::Binary: {
        if (!need(2)) break;
        std::string error;
        auto shape = broadcast_shapes(xs[0].shape, xs[1].shape, error);
        if (!shape) return fail(op, error);
        return {Type{combine_dtype(xs[0], xs[1]), *shape, xs[0].weak && xs[1].weak}, ""};
      }
      case OpClass::Matmul:
        if (!need(2)) break;
        return infer_matmul(xs[0], xs[1]);
      case OpClass::Reduce:
        if (!need(1)) break;
        return infer_reduce(op, xs[0], attrs);
      case OpClass::Composite: {
        if (!need(1)) break;
        if (op == Op::Mean) return infer_reduce(op, xs[0], attrs);
        if (op == Op::RmsNorm || op == Op::LayerNorm) {
          if (attrs.eps && !(*attrs.eps >= 0)) return fail(op, "eps must not be negative");
          attrs.axis = -1;
        }
        int written_axis = attrs.axis;
        if (!normalize_axis(attrs.axis, xs[0].shape.size())) return fail(op, axis_error(written_axis, xs[0].shape.size()));
        return {xs[0], ""};
      }
      case OpClass::Transpose:
        if (!need(1)) break;
        return infer_transpose(xs[0], attrs);
      case OpClass::Reshape:
        if (!need(1)) break;
        return infer_reshape(xs[0], attrs);
      case OpClass::Concat:
        return infer_concat(xs, attrs);
      case OpClass::Split:
        if (!need(1)) break;
        return infer_split(xs[0], attrs);
    }
  } catch (const DimError& e) {
    return fail(op, e.what());
  }
  return fail(op, "wrong number of operands (" + std::to_string(xs.size()) + ")");
}

}  // namespace prism
