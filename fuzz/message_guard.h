// Keeps mutated messages off the real filesystem, away from stopping the daemon, and cheap.
//
// A body that parses is checked as the daemon will read it: `daemon/stop` becomes `daemon/status`,
// `program/run`'s `output` and `inputs` and `program/open`'s file names point into the fuzzer's
// temporary directory, sizes and limits of runs, searches, tunes and proofs are clamped. A body that
// does not parse, or whose framing was mutated (the daemon may cut the stream into other bodies), is
// also defanged byte by byte: no "stop", "output", "inputs" or "uri" survive, nor \u escapes of
// ASCII that could spell them.
#pragma once
#include <optional>
#include <string>

namespace prism::fuzz {

struct GuardedMessage {
  std::string body;
  std::optional<std::string> long_request_id;  // JSON text of the id of a request that may run long
  std::string long_request_method;             // and its method
};

GuardedMessage guard_message(const std::string& body, bool regrouped, const std::string& temp_dir);

// The deepest nesting of [ and { outside strings (stops counting at `limit`).
int json_depth(const std::string& body, int limit);

}  // namespace prism::fuzz
