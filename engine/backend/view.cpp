#include "engine/backend/view.h"

#include "engine/error.h"

namespace prism::backend {

std::vector<std::pair<View, View>> concat_moves(int axis, const std::vector<View>& ins, const View& out) {
  const size_t a = size_t(axis);
  std::vector<std::pair<View, View>> moves;
  int64_t at = 0;
  for (const View& in : ins) {
    moves.push_back({in, part_of(out, axis, at, in.shape.at(a))});
    at += in.shape.at(a);
  }
  return moves;
}

View matrix_of(View v) {
  while (v.shape.size() > 2 && v.shape.front() == 1) {
    v.shape.erase(v.shape.begin());
    v.strides.erase(v.strides.begin());
  }
  return v;
}

View shifted(const View& v, int64_t elements) {
  View out = v;
  if (elements != 0) out.ptr = "(" + v.ptr + " + " + std::to_string(elements) + ")";
  return out;
}

View part_of(const View& v, int axis, int64_t start, int64_t size) {
  View out = shifted(v, start * v.strides.at(size_t(axis)));
  out.shape.at(size_t(axis)) = size;
  return out;
}

std::vector<int64_t> aligned_strides(const View& v, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 0);
  size_t r = v.shape.size();
  for (size_t i = 0; i < r; ++i) {
    size_t src = r - 1 - i, dst = shape.size() - 1 - i;
    s[dst] = v.shape[src] == 1 ? 0 : v.strides[src];
  }
  return s;
}

std::string index_offset(const std::vector<int64_t>& strides, const std::string& suffix) {
  std::string e;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] == 0) continue;
    if (!e.empty()) e += " + ";
    e.append("i").append(std::to_string(d));
    if (strides[d] != 1) e.append("*").append(std::to_string(strides[d])).append(suffix);
  }
  return e.empty() ? "0" : e;
}

Fold fold_over(int axis, const View& x, const View& out) {
  const size_t ax = size_t(axis);
  Fold f;
  f.shape = x.shape;
  f.k = f.shape[ax];
  f.step = x.strides[ax];
  f.shape[ax] = 1;
  View o = out;
  if (o.shape.size() + 1 == x.shape.size()) {  // keepdims=false: the axis back as size 1
    o.shape.insert(o.shape.begin() + long(ax), 1);
    o.strides.insert(o.strides.begin() + long(ax), 0);
  }
  f.x_strides = aligned_strides(x, f.shape);
  f.out_strides = aligned_strides(o, f.shape);
  return f;
}

}  // namespace prism::backend
