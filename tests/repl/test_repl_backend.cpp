// A backend a build registers (prismd-scalar: the tests' scalar backend, tests/backends/scalar)
// reaches the REPL through the daemon alone: `daemon status` lists it in its own words, `tune`
// runs on it and its table names its machine and threads as the backend says, `code` prints its
// source. Nothing in the REPL names it.
#include <catch2/catch.hpp>

#include <algorithm>

#include "repl/repl_fixture.h"

using nlohmann::json;
using prism::test::example;
using prism::test::json_lines;
using prism::test::ReplFixture;

TEST_CASE("a backend a build registers is listed, tuned and shown by the REPL in its own words", "[repl][e2e][registry]") {
  ReplFixture f;
  f.extra_env["PRISMD"] = prism::test::bin("prismd-scalar");
  f.extra_env["PRISM_TUNE_NOISE_LIMIT"] = "off";
  auto status = f.prism({"--json", "-c", "daemon status"});
  INFO(status.err);
  REQUIRE(status.exit_code == 0);
  const json targets = json_lines(status.out).back().at("targets");
  const auto scalar = std::find_if(targets.begin(), targets.end(), [](const json& t) { return t.at("name") == "scalar"; });
  REQUIRE(scalar != targets.end());
  CHECK(scalar->at("available") == true);
  CHECK(scalar->at("machine") == "the scalar test machine");
  CHECK(scalar->at("device") == "cpu");
  CHECK(scalar->at("runtime") == "c-abi");

  auto tune = f.prism({"-c", "open " + example("rms_linear") + "; tune rms_linear n=4 d=64 --top 2 --target scalar"});
  INFO(tune.out << tune.err);
  REQUIRE(tune.exit_code == 0);
  CHECK_THAT(tune.out, Catch::Contains("rms_linear d=64 n=4 on scalar (scalar test machine (one thread, no vector units);") &&
                           Catch::Contains("1 thread (it has one)"));
  auto code = f.prism({"-c", "code rms_linear --target scalar"});
  INFO(code.err);
  REQUIRE(code.exit_code == 0);
  CHECK_THAT(code.out, Catch::Contains("on the scalar test machine") && Catch::Contains("prism_wide("));
  auto unknown = f.prism({"-c", "tune rms_linear n=4 d=64 --target tpu"});
  CHECK(unknown.exit_code != 0);
  CHECK_THAT(unknown.err + unknown.out, Catch::Contains("targets: cpu, cuda, scalar"));
}
