#include "engine/backend/view.h"

#include "engine/error.h"

namespace prism::backend {

View dense_view(const std::string& ptr, const std::vector<int64_t>& shape) { return View{ptr, shape, dense_strides(shape)}; }

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

std::string tile_offset(const sgraph::Map& map, const std::vector<int64_t>& tile, const std::vector<int64_t>& strides,
                        size_t first, const std::string& f, int64_t loop_range, const std::string& suffix) {
  std::string off;
  auto add = [&](const std::string& var, int64_t scale) {
    if (scale == 0 || var == "0") return;
    if (!off.empty()) off += " + ";
    off.append(var).append(" * ").append(std::to_string(scale)).append(suffix);
  };
  for (size_t j = 0; j < tile.size(); ++j) {
    int64_t walk = map.loop.dim == int(j) ? loop_range : 1;
    for (size_t gi = 0; gi < map.grid.size(); ++gi)
      if (map.grid[gi].dim == int(j)) add(std::string("b").append(std::to_string(gi)), tile[j] * walk * strides[first + j]);
    if (walk > 1) add(f, tile[j] * strides[first + j]);
  }
  return off.empty() ? "0" : off;
}

}  // namespace prism::backend
