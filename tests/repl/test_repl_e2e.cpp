// The REPL's script mode end to end: the real `prism` binary starting the real daemon.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/subprocess.h"

using prism::test::bin;
using prism::test::ProcessResult;
using prism::test::source;
using prism::test::TempDir;

namespace {

// One private daemon per test: started by the first `prism` call, stopped when the test ends.
class ReplFixture {
 public:
  ReplFixture() { std::filesystem::create_directories(dir_ / "state"); }
  ~ReplFixture() {
    if (std::filesystem::exists(socket())) prism::test::run_process({bin("prism"), "--socket", socket(), "--no-start", "-c", "daemon stop"}, "", env());
  }
  std::string socket() const { return dir_ / "run/prismd.sock"; }
  std::map<std::string, std::string> env() const {
    return {{"XDG_STATE_HOME", dir_ / "state"}, {"PRISM_SOCKET", ""}, {"PRISM_CACHE_DIR", dir_ / "cache"}};
  }

  ProcessResult prism(std::vector<std::string> args, const std::string& input = "") const {
    std::vector<std::string> argv = {bin("prism"), "--socket", socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return prism::test::run_process(argv, input, env());
  }
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
};

std::string example(const std::string& name) { return source("examples/" + name + ".prism"); }

// --json output: one object per line.
std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::istringstream lines(out);
  std::vector<nlohmann::json> objects;
  for (std::string line; std::getline(lines, line);) objects.push_back(nlohmann::json::parse(line));
  return objects;
}

}  // namespace

TEST_CASE("prism -c starts the daemon, opens, shows and runs a program", "[repl][e2e]") {
  ReplFixture f;
  auto r = f.prism({"-c", "open " + example("rms_linear") + "; show rms_linear; run rms_linear n=8 d=64"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("rms_linear") != std::string::npos);
  CHECK(r.out.find("f16[n, d]") != std::string::npos);   // inferred shapes
  CHECK(r.out.find("lowered:") != std::string::npos);
  CHECK(r.out.find("f16[8, 64]") != std::string::npos);  // the run's output
  CHECK(std::filesystem::exists(f.socket()));

  // A second client finds the same daemon and the program still open.
  auto again = f.prism({"--no-start", "-c", "programs"});
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("rms_linear") != std::string::npos);
}

TEST_CASE("opening a second file that defines the same program replaces the first", "[repl][e2e]") {
  ReplFixture f;
  std::filesystem::create_directories(f.dir() / "copy");
  std::filesystem::copy_file(example("rms_linear"), f.dir() / "copy/rms_linear.prism");
  auto r = f.prism({"-c", "open " + example("rms_linear") + "; open " + (f.dir() / "copy/rms_linear.prism") + "; programs"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("(replaces the definition from") != std::string::npos);
  CHECK(r.out.find(f.dir() / "copy/rms_linear.prism") != std::string::npos);
}

TEST_CASE("a script stops at the first error with its line on stderr", "[repl][e2e]") {
  ReplFixture f;
  auto r = f.prism({}, "open " + example("rms_linear") + "\nshow no_such_program\nprograms\n");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("<stdin>:2: error:") != std::string::npos);
  CHECK(r.err.find("no_such_program") != std::string::npos);
  CHECK(r.out.find("PROGRAM") == std::string::npos);  // `programs` never ran
}

TEST_CASE("a typed program block with a shape error reports line and column", "[repl][e2e]") {
  ReplFixture f;
  std::string block =
      "program bad(X: f32[n, d], W: f32[n, d]) {\n"
      "  return matmul(X, W)\n"
      "}\n";
  auto r = f.prism({}, block);
  CHECK(r.exit_code == 1);
  INFO(r.err);
  CHECK(r.err.find("<stdin>:2:10: error:") != std::string::npos);
  CHECK(r.err.find("inner dims d and n differ") != std::string::npos);
  CHECK(r.err.find('^') != std::string::npos);

  auto ok = f.prism({}, "program twice(X: f32[n]) {\n  return X * 2\n}\nrun twice n=3 --seed 7\n");
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("defined: twice") != std::string::npos);
  CHECK(ok.out.find("f32[3]") != std::string::npos);
}

TEST_CASE("script mode with --json prints one object per command", "[repl][e2e]") {
  ReplFixture f;
  std::string out_file = f.dir() / "o.npy";
  auto r = f.prism({"--json", "-c", "open " + example("rms_linear") + "; run rms_linear n=4 d=32 --seed 3 --out " + out_file});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<nlohmann::json> objects = json_lines(r.out);
  REQUIRE(objects.size() == 2);
  CHECK(objects[0]["programs"] == nlohmann::json::array({"rms_linear"}));
  CHECK(objects[1]["outputs"][0]["shape"] == nlohmann::json::array({4, 32}));
  CHECK(objects[1]["bindings"]["d"] == 32);
  CHECK(std::filesystem::exists(out_file));
}

TEST_CASE("script errors: unknown command, bad binding, missing dim, no daemon", "[repl][e2e]") {
  ReplFixture f;
  auto unknown = f.prism({"-c", "frobnicate"});
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("unknown command 'frobnicate'") != std::string::npos);

  auto bad = f.prism({"-c", "open " + example("rms_linear") + "; run rms_linear n=eight"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("n=eight") != std::string::npos);

  auto missing = f.prism({"-c", "open " + example("rms_linear") + "; run rms_linear n=8"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("'d'") != std::string::npos);

  TempDir other;
  auto none = prism::test::run_process({bin("prism"), "--socket", other / "nobody.sock", "--no-start", "-c", "programs"});
  CHECK(none.exit_code == 3);
  CHECK(none.err.find("no prismd answers") != std::string::npos);
}

TEST_CASE("equiv proves, refutes, and --json carries result and stop_reason", "[repl][e2e][equiv]") {
  ReplFixture f;
  auto r = f.prism({"--json", "-c",
                    "open " + example("rms_linear") + "; equiv rms_linear matmul(X, W) / rms(X); "
                    "equiv rms_linear matmul(X, W) * rms(X); egraph"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<nlohmann::json> objects = json_lines(r.out);
  REQUIRE(objects.size() == 4);
  CHECK(objects[1]["result"] == "proved");
  CHECK(objects[1]["stop_reason"] == "goal reached");
  CHECK(objects[1]["explanation"].get<std::string>().find("matmul") != std::string::npos);
  CHECK(objects[2]["result"] == "refuted");
  CHECK(objects[2]["stop_reason"] == "counterexample");
  CHECK(objects[2]["counterexample"]["maxAbsDiff"].get<double>() > 0);
  CHECK(objects[3]["nodes"].get<int>() > 0);

  auto text = f.prism({"--no-start", "-c", "equiv rms_linear matmul(X, W) * rms(X)"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("refuted (counterexample)") == 0);
  CHECK(text.out.find("they differ by") != std::string::npos);

  auto shapes = f.prism({"--no-start", "-c", "equiv rms_linear sum(X, axis=-1)"});
  CHECK(shapes.exit_code == 0);
  CHECK(shapes.out.find("refuted") == 0);
  CHECK(shapes.out.find("different shapes") != std::string::npos);

  auto bad = f.prism({"--no-start", "-c", "equiv rms_linear"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("usage: equiv") != std::string::npos);
}

TEST_CASE("search, candidates and explain from a script", "[repl][e2e][search]") {
  ReplFixture f;
  auto r = f.prism({"--json", "-c", "open " + example("rms_linear") + "; search rms_linear --max-kernels 1; candidates rms_linear"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());  // no progress bar in script mode
  std::vector<nlohmann::json> objects = json_lines(r.out);
  REQUIRE(objects.size() >= 3);
  const auto& search = objects[1];
  CHECK(search["stats"]["stopReason"] == "complete");
  size_t families = search["candidates"].get<size_t>();
  REQUIRE(families > 0);
  REQUIRE(objects.size() == 2 + families);  // one object per family
  for (size_t i = 2; i < objects.size(); ++i) {
    CHECK(objects[i].contains("id"));
    CHECK(objects[i]["kernels"] == 1);
    CHECK(objects[i]["text"].get<std::string>().find("kernel 0: custom") != std::string::npos);
    CHECK(objects[i]["verified"] == true);
  }

  auto text = f.prism({"--no-start", "-c", "explain rms_linear 1"});
  INFO(text.err);
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("kernel 0: custom") != std::string::npos);
  CHECK(text.out.find("proof (e-graph, symbolic sizes):") != std::string::npos);
  auto missing = f.prism({"--no-start", "-c", "explain rms_linear 999"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("no candidate 999") != std::string::npos);
}

TEST_CASE("the REPL warns when the running daemon's binary was rebuilt", "[repl][e2e][stale]") {
  ReplFixture f;
  // A daemon started from a copy that is then replaced: what a rebuild does to a running one.
  std::string copy = f.dir() / "prismd-copy";
  std::filesystem::copy_file(bin("prismd"), copy);
  std::filesystem::permissions(copy, std::filesystem::perms::owner_all);
  auto first = f.prism({"--prismd", copy, "-c", "programs"});
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.err.empty());
  std::filesystem::remove(copy);
  auto second = f.prism({"--no-start", "-c", "programs"});
  CHECK(second.exit_code == 0);
  CHECK(second.err.find("has since been rebuilt") != std::string::npos);
}

TEST_CASE("tune prints the speedup table; code and export give the best kernel", "[repl][e2e][tune]") {
  ReplFixture f;
  auto r = f.prism({"--json", "-c", "open " + example("rms_linear") + "; tune rms_linear n=4 d=64 --top 2; code rms_linear; export rms_linear " +
                                        (f.dir() / "k.cpp")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto lines = json_lines(r.out);
  REQUIRE(lines.size() == 4);
  const auto& tune = lines[1];
  for (const char* key : {"baseline_ms", "best_ms", "speedup", "roofline_fraction", "candidate", "target"}) CHECK(tune.contains(key));
  CHECK(tune["target"] == "cpu");
  CHECK(tune["best_ms"].get<double>() > 0);
  CHECK(tune["candidate"].is_number_integer());
  CHECK(lines[2]["candidate"] == tune["candidate"]);
  CHECK_THAT(lines[2]["source"].get<std::string>(), Catch::Contains("prism_entry"));
  CHECK(lines[3]["header_file"] == f.dir() / "k.h");
  // The exported files compile on their own.
  auto cc = prism::test::run_process({"c++", "-std=c++17", "-O1", "-fopenmp", "-fPIC", "-shared", f.dir() / "k.cpp", "-o", f.dir() / "k.so", "-lopenblas"});
  INFO(cc.err);
  CHECK(cc.exit_code == 0);

  // The human table: one summary row, the timed rows, a second tune answered from the DB.
  auto text = f.prism({"-c", "tune rms_linear n=4 d=64 --top 2"});
  INFO(text.err);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("from the tuning DB") != std::string::npos);
  CHECK(text.out.find("SPEEDUP") != std::string::npos);
  CHECK(text.out.find("ROOFLINE") != std::string::npos);
  auto bad = f.prism({"-c", "tune rms_linear"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("tune needs the dims") != std::string::npos);
}
