// Test support: running the built programs (engine/util/process.h), temporary directories, paths.
#pragma once
#include <string>

#include "engine/util/process.h"

namespace prism::test {

using prism::ProcessResult;
using prism::run_process;

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
