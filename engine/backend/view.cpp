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

std::string unary_expr(Op op, const std::string& a, const MathNames& math, const std::string& who) {
  switch (op) {
    case Op::Neg: return "(-" + a + ")";
    case Op::Exp: return std::string(math.exp) + "(" + a + ")";
    case Op::Log: return std::string(math.log) + "(" + a + ")";
    case Op::Sqrt: return std::string(math.sqrt) + "(" + a + ")";
    case Op::Rsqrt: return "(1.0f / " + std::string(math.sqrt) + "(" + a + "))";
    case Op::Square: return "prism_square(" + a + ")";
    case Op::Silu: return "prism_silu(" + a + ")";
    case Op::Gelu: return "prism_gelu(" + a + ")";
    case Op::Relu: return "prism_relu(" + a + ")";
    default: throw Error(Error::Kind::InvalidArgument, who + ": '" + op_name(op) + "' is not a unary op it can lower");
  }
}

std::string binary_expr(Op op, const std::string& a, const std::string& b, const std::string& who) {
  switch (op) {
    case Op::Add: return "(" + a + " + " + b + ")";
    case Op::Sub: return "(" + a + " - " + b + ")";
    case Op::Mul: return "(" + a + " * " + b + ")";
    case Op::Div: return "(" + a + " / " + b + ")";
    default: throw Error(Error::Kind::InvalidArgument, who + ": '" + op_name(op) + "' is not a binary op it can lower");
  }
}

}  // namespace prism::backend
