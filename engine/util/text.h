// Small text helpers shared by the engine, the protocol and the REPL.
#pragma once
#include <string>
#include <vector>

namespace prism {

// The items with `sep` between them: join({"n", "d"}, ", ") is "n, d".
inline std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out.append(i ? sep : "").append(items[i]);
  return out;
}

}  // namespace prism
