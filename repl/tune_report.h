// The text `tune` prints for a tune/run result (docs/protocol.md): the machine, the summary row,
// the timed candidates with the cost model's ranks, how they were timed. A function of the result
// alone, so that what users read is tested without a daemon or a machine's timings.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace prism::repl {

// "d=1024 n=8" from {"d": 1024, "n": 8}; "-" when empty.
std::string sizes_of(const nlohmann::json& sizes);

std::string tune_report(const nlohmann::json& result, const std::string& program);

}  // namespace prism::repl
