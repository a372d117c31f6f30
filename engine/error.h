// Errors the engine reports to its callers. The protocol layer maps each kind to a JSON-RPC code;
// the engine itself knows nothing about codes.
#pragma once
#include <stdexcept>
#include <string>

namespace prism {

class Error : public std::runtime_error {
 public:
  enum class Kind {
    NotFound,         // no such program / document / file
    InvalidArgument,  // a request names something malformed (bad binding, bad path, wrong shape)
    Failed,           // well-formed request that could not be carried out
    Cancelled,        // the caller's CancelToken fired
  };
  Error(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  // `subject`: the name in the request the error is about (a dim, an input, a program, a
  // candidate's number), so a client can point at the word that named it.
  Error(Kind kind, const std::string& message, std::string subject)
      : std::runtime_error(message), kind_(kind), subject_(std::move(subject)) {}
  Kind kind() const { return kind_; }
  const std::string& subject() const { return subject_; }

 private:
  Kind kind_;
  std::string subject_;
};

}  // namespace prism
