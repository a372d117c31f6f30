#include "engine/lang/suggest.h"

#include <algorithm>

namespace prism {

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::optional<std::string> nearest_name(const std::string& name, const std::vector<std::string>& candidates) {
  if (name.size() > 64) return std::nullopt;  // long garbage: no useful suggestion, and keeps cost bounded
  std::optional<std::string> best;
  size_t best_distance = 3;
  size_t looked = 0;
  for (const auto& c : candidates) {
    if (++looked > 2000) break;  // bounds the cost in huge programs; suggestions are a courtesy
    size_t d = edit_distance(name, c);
    if (d < best_distance && d < name.size()) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace prism
