#include "engine/backend/target.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "engine/util/text.h"

namespace prism::backend {

double TargetDescription::cache_hit_fraction(double bytes) const {
  if (!read_curve.empty() && cache_bandwidth_gbs > bandwidth_gbs && bandwidth_gbs > 0) {
    const double slow = 1 / bandwidth_gbs, fast = 1 / cache_bandwidth_gbs;
    return std::clamp((slow - 1 / bandwidth_for(bytes)) / (slow - fast), 0.0, 1.0);
  }
  const double all = double(l3_bytes) / 2 + double(l2_bytes) * double(cores), none = cache_capacity();
  return none <= 0 || bytes > none ? 0.0 : bytes <= all ? 1.0 : (none - bytes) / (none - all);
}

double TargetDescription::bandwidth_for(double bytes) const {
  if (cache_bandwidth_gbs <= 0) return bandwidth_gbs;
  if (read_curve.empty()) {
    const double h = cache_hit_fraction(bytes);
    return h <= 0 ? bandwidth_gbs : 1.0 / (h / cache_bandwidth_gbs + (1 - h) / bandwidth_gbs);
  }
  if (bytes <= read_curve.front().first) return std::max(read_curve.front().second, bandwidth_gbs);
  for (size_t i = 1; i < read_curve.size(); ++i) {
    const auto [b0, g0] = read_curve[i - 1];
    const auto [b1, g1] = read_curve[i];
    if (bytes > b1) continue;
    const double t = b1 > b0 ? (bytes - b0) / (b1 - b0) : 1;
    return std::max(1.0 / ((1 - t) / g0 + t / g1), bandwidth_gbs);
  }
  return bandwidth_gbs;
}

std::string feature_words(const std::vector<std::pair<std::string, std::string>>& words) { return key_values(words); }

std::vector<std::pair<std::string, std::string>> parse_feature_words(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> words;
  std::istringstream in{std::string(text)};
  for (std::string word; in >> word;) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos || eq == 0) throw Error(Error::Kind::InvalidArgument, "a feature word is not key=value: '" + word + "'");
    words.emplace_back(word.substr(0, eq), word.substr(eq + 1));
  }
  return words;
}

std::string number_text(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", value);
  return buf;
}

double parse_number(std::string_view text, const std::string& what) {
  const std::string s(text);
  char* end = nullptr;
  const double value = s.empty() ? 0 : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) throw Error(Error::Kind::InvalidArgument, what + " is not a number: '" + s + "'");
  return value;
}

}  // namespace prism::backend
