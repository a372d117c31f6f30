// `--dump-after PASS` (docs/architecture.md, "The pipeline"): taken off a command's arguments,
// passed on as the protocol's `dumpAfter`, and what the answer's `dump` holds as text, each item
// under a line that says which pass left it.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace prism::repl {

// Takes `--dump-after PASS` out of `args` (`command` names the command for its usage error):
// PASS, or "" where it is not there.
std::string take_dump_after(const std::string& command, std::vector<std::string>& args);
// The answer's `dump` as text ("" when it has none).
std::string dump_text(const nlohmann::json& answer);

}  // namespace prism::repl
