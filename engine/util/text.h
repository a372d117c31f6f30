// Small text helpers shared by the engine, the protocol and the REPL.
#pragma once
#include <string>
#include <type_traits>
#include <vector>

namespace prism {

// The items with `sep` between them: join({"n", "d"}, ", ") is "n, d".
inline std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out.append(i ? sep : "").append(items[i]);
  return out;
}

// "k=v k=v": key and value pairs in their order (a map's: by key), numbers as std::to_string
// writes them; "" for none. Sizes, schedules and a backend's feature words are written so.
template <typename Pairs>
std::string key_values(const Pairs& pairs) {
  std::string out;
  for (const auto& [key, value] : pairs) {
    out.append(out.empty() ? "" : " ").append(key).append("=");
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(value)>>) out.append(std::to_string(value));
    else out.append(value);
  }
  return out;
}

}  // namespace prism
