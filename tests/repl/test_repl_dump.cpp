// `--dump-after PASS` (docs/architecture.md, "The pipeline"): `search` prints what a search pass
// left, `code` what instantiating, lowering or printing left, each item under its pass's name; a
// pass of the other command, or none of that name, is an error naming the command's passes.
#include <catch2/catch.hpp>

#include "repl/repl_fixture.h"

using prism::test::example;
using prism::test::ReplFixture;

TEST_CASE("search and code print the IR a pass left with --dump-after", "[repl][e2e][pipeline]") {
  ReplFixture f;
  auto verify = f.prism({"-c", "open " + example("rms_linear") + "; search rms_linear --dump-after verify"});
  INFO(verify.out << verify.err);
  REQUIRE(verify.exit_code == 0);
  CHECK_THAT(verify.out, Catch::Contains("-- after verify (1 of ") && Catch::Contains("kernel 0: custom") &&
                             Catch::Contains("verified families (complete"));
  auto lower = f.prism({"-c", "code rms_linear n=8 d=64 --dump-after lower"});
  INFO(lower.err);
  REQUIRE(lower.exit_code == 0);
  CHECK_THAT(lower.out, Catch::StartsWith("-- after lower (1 of 1) --\ntensor X: f16[8, 64] (input)") &&
                            Catch::Contains("// rms_linear candidate"));
  auto wrong = f.prism({"-c", "search rms_linear --dump-after lower"});
  CHECK(wrong.exit_code != 0);
  CHECK_THAT(wrong.err, Catch::Contains("'lower' runs when a kernel is made") && Catch::Contains("search/run runs parse, normalize"));
  auto unknown = f.prism({"-c", "code rms_linear n=8 d=64 --dump-after codegen"});
  CHECK(unknown.exit_code != 0);
  CHECK_THAT(unknown.err, Catch::Contains("no pass is named 'codegen'; kernel/source runs instantiate, lower, print"));
}
