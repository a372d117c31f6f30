// Ctrl-C while a request runs cancels that request ($/cancelRequest) instead of killing the REPL.
#pragma once
#include <thread>

namespace prism::repl {

class Session;

// How many times Ctrl-C was pressed since the forwarder started (read by the line editor to tell
// an interrupted prompt from end of input).
int interrupts_seen();

class InterruptForwarder {
 public:
  explicit InterruptForwarder(Session& session);
  ~InterruptForwarder();
  InterruptForwarder(const InterruptForwarder&) = delete;
  InterruptForwarder& operator=(const InterruptForwarder&) = delete;

 private:
  Session& session_;
  int pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace prism::repl
