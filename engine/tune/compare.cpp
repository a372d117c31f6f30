#include "engine/tune/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace prism::tune {

namespace {

std::string index_text(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = shape[i] ? flat % shape[i] : 0;
    flat = shape[i] ? flat / shape[i] : 0;
  }
  std::string s = "(";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + ")";
}

}  // namespace

Comparison compare_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol, double atol) {
  Comparison c;
  if (got.size() != want.size()) {
    c.failure = "the kernel produced " + std::to_string(got.size()) + " outputs, the program " + std::to_string(want.size());
    return c;
  }
  for (size_t o = 0; o < got.size(); ++o) {
    const Tensor &g = got[o], &w = want[o];
    if (g.data.size() != w.data.size()) {
      c.failure = "output " + std::to_string(o) + " has " + std::to_string(g.data.size()) + " elements, expected " +
                  std::to_string(w.data.size());
      return c;
    }
    double scale = 0;
    for (float v : w.data)
      if (std::isfinite(v)) scale = std::max(scale, double(std::fabs(v)));
    for (size_t i = 0; i < g.data.size(); ++i) {
      // Where the program itself computes NaN or an infinity (log of a negative input, say), the
      // kernel must compute the same.
      if (g.data[i] == w.data[i] || (std::isnan(g.data[i]) && std::isnan(w.data[i]))) continue;
      double err = std::fabs(double(g.data[i]) - double(w.data[i]));
      double tolerance = rtol * std::fabs(double(w.data[i])) + atol * scale;
      if (!(err <= tolerance) || !std::isfinite(w.data[i])) {  // NaN fails too
        char buf[256];
        std::snprintf(buf, sizeof buf, "output %zu differs at %s: %g vs %g (tolerance %.3g)", o,
                      index_text(w.shape, int64_t(i)).c_str(), double(g.data[i]), double(w.data[i]), tolerance);
        c.failure = buf;
        c.max_error = std::isnan(err) ? INFINITY : err;
        return c;
      }
      c.max_error = std::max(c.max_error, err);
    }
  }
  return c;
}

namespace {

// Both second chances: `got` passes where |got - exact| <= |want - exact| + (unit_roundoff + rtol)
// |exact| + atol max|exact| + 2 |moved - exact| (no `moved`: that last term is 0).
Comparison compare_near_exact(const Tensor& got, const Tensor& want, const Tensor& exact, const Tensor* moved, double unit_roundoff,
                              double rtol, double atol) {
  Comparison c;
  const size_t n = want.data.size();
  if (got.data.size() != n || exact.data.size() != n || (moved && moved->data.size() != n)) {
    c.failure = "output 0 has " + std::to_string(got.data.size()) + " elements, expected " + std::to_string(n);
    return c;
  }
  double scale = 0;
  for (float v : exact.data)
    if (std::isfinite(v)) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < n; ++i) {
    const double g = got.data[i], w = want.data[i], e = exact.data[i];
    if (g == w || (std::isnan(g) && std::isnan(w))) continue;
    const double err = std::fabs(g - e), moved_by = moved ? std::fabs(double(moved->data[i]) - e) : 0;
    const double bound = std::fabs(w - e) + (unit_roundoff + rtol) * std::fabs(e) + atol * scale + 2 * (std::isnan(moved_by) ? INFINITY : moved_by);
    if (!(err <= bound) || !std::isfinite(e)) {
      char buf[320];
      std::snprintf(buf, sizeof buf, "output 0 differs at %s: %g vs %g, and the exact result is %g (%.3g from it, allowed %.3g%s)",
                    index_text(want.shape, int64_t(i)).c_str(), g, w, e, err, bound,
                    moved ? " with what rounding its values differently moves it" : "");
      c.failure = buf;
      c.max_error = std::isnan(err) ? INFINITY : err;
      return c;
    }
    c.max_error = std::max(c.max_error, std::fabs(g - w));
  }
  return c;
}

}  // namespace

Comparison compare_no_worse(const Tensor& got, const Tensor& want, const Tensor& exact, double unit_roundoff) {
  return compare_near_exact(got, want, exact, nullptr, unit_roundoff, 1e-3, 1e-4);
}

Comparison compare_conditioned(const Tensor& got, const Tensor& want, const Tensor& exact, const Tensor& moved, double unit_roundoff,
                               double rtol, double atol) {
  return compare_near_exact(got, want, exact, &moved, unit_roundoff, rtol, atol);
}

std::optional<std::string> mask_non_finite_reference(Tensor& got, Tensor& want, Tensor* exact) {
  if (got.data.size() != want.data.size() || (exact && exact->data.size() != want.data.size()))
    return "has " + std::to_string(got.data.size()) + " elements, expected " + std::to_string(want.data.size());
  int64_t nan = 0, inf = 0, first = -1;
  for (size_t i = 0; i < want.data.size(); ++i) {
    if (!std::isfinite(want.data[i])) {
      got.data[i] = want.data[i] = 0;
      if (exact) exact->data[i] = 0;
    } else if (!std::isfinite(got.data[i])) {
      ++(std::isnan(got.data[i]) ? nan : inf);
      if (first < 0) first = int64_t(i);
    }
  }
  if (first < 0) return std::nullopt;
  std::string counts = nan ? std::to_string(nan) + " NaN" : "";
  if (inf) counts += (nan ? " and " : "") + std::to_string(inf) + (inf == 1 ? " infinity" : " infinities");
  return "has " + counts + " where the reference is finite (first at " + index_text(want.shape, first) + ")";
}

}  // namespace prism::tune
