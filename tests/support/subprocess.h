// Running the built programs from tests: feed stdin, capture stdout/stderr and the exit code,
// with a hard time limit so that a hung program fails its test instead of hanging the suite.
#pragma once
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace prism::test {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal or the time limit
  bool timed_out = false;
  std::string out;
  std::string err;
};

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input = "",
                          const std::map<std::string, std::string>& env = {},
                          std::chrono::milliseconds limit = std::chrono::seconds(60));

// A fresh private directory under /tmp, removed with everything in it when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  // A daemon socket inside it (short enough for sun_path).
  std::string socket() const { return path_ + "/prismd.sock"; }

 private:
  std::string path_;
};

std::string bin(const std::string& program);      // PRISM_BIN_DIR/program
std::string source(const std::string& relative);  // PRISM_SOURCE_DIR/relative
// The text of examples/NAME.prism.
std::string read_example(const std::string& name);

}  // namespace prism::test
