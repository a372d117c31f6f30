// "did you mean" help for misspelled names.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace prism {

// The candidate closest to `name` by edit distance, when it is close enough to be a likely typo
// (distance at most 2, and less than the name's length).
std::optional<std::string> nearest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace prism
