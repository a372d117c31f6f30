#include "support/subprocess.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace prism::test {

TempDir::TempDir() {
  char tmpl[] = "/tmp/prism-test-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string bin(const std::string& program) { return std::string(PRISM_BIN_DIR) + "/" + program; }
std::string source(const std::string& relative) { return std::string(PRISM_SOURCE_DIR) + "/" + relative; }

std::string read_example(const std::string& name) {
  std::ifstream in(source("examples/" + name + ".prism"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace prism::test
