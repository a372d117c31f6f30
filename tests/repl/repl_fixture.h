// A private daemon and the real `prism` binary for end-to-end REPL tests.
#pragma once
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/subprocess.h"

namespace prism::test {

// One private daemon per test: started by the first `prism` call, stopped when the test ends.
class ReplFixture {
 public:
  ReplFixture() { std::filesystem::create_directories(dir_ / "state"); }
  ~ReplFixture() {
    if (std::filesystem::exists(socket())) prism::test::run_process({bin("prism"), "--socket", socket(), "--no-start", "-c", "daemon stop"}, "", env());
  }
  std::string socket() const { return dir_ / "run/prismd.sock"; }
  std::map<std::string, std::string> env() const {
    std::map<std::string, std::string> vars = {{"XDG_STATE_HOME", dir_ / "state"}, {"PRISM_SOCKET", ""}, {"PRISM_CACHE_DIR", dir_ / "cache"}};
    vars.insert(extra_env.begin(), extra_env.end());
    return vars;
  }
  // More variables for the programs it starts (set before the first call starts the daemon).
  std::map<std::string, std::string> extra_env;

  ProcessResult prism(std::vector<std::string> args, const std::string& input = "") const {
    std::vector<std::string> argv = {bin("prism"), "--socket", socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return prism::test::run_process(argv, input, env());
  }
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
};

inline std::string example(const std::string& name) { return source("examples/" + name + ".prism"); }

// --json output: one object per line.
inline std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::istringstream lines(out);
  std::vector<nlohmann::json> objects;
  for (std::string line; std::getline(lines, line);) objects.push_back(nlohmann::json::parse(line));
  return objects;
}

}  // namespace prism::test
