// The REPL's script mode end to end: the real `prism` binary starting the real daemon.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/io/npy.h"
#include "repl/format.h"
#include "repl/repl_fixture.h"
#include "support/subprocess.h"
#include "support/terminal.h"

using prism::test::bin;
using prism::test::ProcessResult;
using prism::test::source;
using prism::test::example;
using prism::test::json_lines;
using prism::test::ReplFixture;
using prism::test::TempDir;

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

TEST_CASE("a script stops at the first error with its line and column on stderr", "[repl][e2e]") {
  ReplFixture f;
  auto r = f.prism({}, "open " + example("rms_linear") + "\nshow no_such_program\nprograms\n");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("<stdin>:2:6: error:") != std::string::npos);  // at the program's name
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

TEST_CASE("run says which inputs it drew beside the files given, and a flag given twice is an error", "[repl][e2e]") {
  ReplFixture f;
  const std::string x = f.dir() / "x.npy";
  const std::string program = "program prod(X: f32[n], Y: f32[n]) {\n  return X * Y\n}\n";
  auto r = f.prism({}, program + "run prod n=3 --out " + x + "\nrun prod --in X=" + x + "\n");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("note: Y was drawn at random (seed 0); give --in NAME=FILE.npy for it") != std::string::npos);
  auto once = f.prism({}, program + "run prod n=3\n");
  CHECK(once.out.find("drawn at random") == std::string::npos);  // nothing given: all drawn, as asked
  for (const std::string& twice : std::vector<std::string>{"run prod n=3 --out a.npy --out b.npy", "run prod n=3 --seed 1 --seed 2", "run prod --in X=" + x + " --in X=" + x}) {
    auto bad = f.prism({}, program + twice + "\n");
    INFO(twice << ": " << bad.err);
    CHECK(bad.exit_code == 1);
    CHECK(bad.err.find("given twice") != std::string::npos);
  }
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

TEST_CASE("help ops lists every op, the casts, the spelled calls and the operators", "[repl][e2e][spellings]") {
  ReplFixture f;
  auto r = f.prism({"-c", "help ops"});
  REQUIRE(r.exit_code == 0);
  for (const char* row : {"softmax(x, axis=-1)", "erf(x)", "maximum(a, b)", "f32(x), f16(x), bf16(x)", "where(condition, input, other)",
                          "clamp(input, min=none, max=none)", "a ** b", "x.T, x.mT", "dim=, keepdim="})
    CHECK(r.out.find(row) != std::string::npos);
  auto unknown = f.prism({"-c", "help opz"});
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("no command 'opz'; did you mean 'ops'?") != std::string::npos);
}

TEST_CASE("on an 80-column terminal, help, candidates and a tune print no line wider than the terminal", "[repl][e2e][terminal]") {
  ReplFixture f;
  const std::string commands = "open " + example("rms_linear") + "; help; help ops; search rms_linear; candidates rms_linear; tune rms_linear n=4 d=64 --top 2";
  const prism::test::TerminalResult r = prism::test::run_on_terminal({bin("prism"), "--socket", f.socket(), "-c", commands}, f.env(), 80);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  std::istringstream lines(r.out);
  int checked = 0;
  for (std::string line; std::getline(lines, line); ++checked) {
    INFO(line);
    CHECK(prism::repl::display_width(line) <= 80);  // wider, the terminal would break it mid-word
  }
  CHECK(checked > 60);
  for (const char* shown : {"WHAT IT DOES", "WHAT IT COMPUTES", "VERIFIED", "VS EAGER", "ROOFLINE"}) CHECK(r.out.find(shown) != std::string::npos);
}

TEST_CASE("script errors: unknown command, bad binding, missing dim, no daemon", "[repl][e2e]") {
  ReplFixture f;
  auto unknown = f.prism({"-c", "frobnicate"});
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("unknown command 'frobnicate'") != std::string::npos);
  auto typo = f.prism({"-c", "opne " + example("rms_linear")});
  CHECK(typo.exit_code == 1);
  CHECK(typo.err.find("unknown command 'opne'; did you mean 'open'?") != std::string::npos);

  auto bad = f.prism({"-c", "open " + example("rms_linear") + "; run rms_linear n=eight"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("n=eight") != std::string::npos);

  auto not_a_dim = f.prism({"-c", "open " + example("rms_linear") + "; tune rms_linear n=8 d=32 h=4"});
  CHECK(not_a_dim.exit_code == 1);
  CHECK(not_a_dim.err.find("'h' is not a dim of rms_linear (its dims: n, d)") != std::string::npos);

  auto missing = f.prism({"-c", "open " + example("rms_linear") + "; run rms_linear n=8"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("'d'") != std::string::npos);

  TempDir other;
  auto none = prism::test::run_process({bin("prism"), "--socket", other / "nobody.sock", "--no-start", "-c", "programs"});
  CHECK(none.exit_code == 3);
  CHECK(none.err.find("no prismd answers") != std::string::npos);
}

TEST_CASE("equiv proves, refutes, and --json carries result and stopReason", "[repl][e2e][equiv]") {
  ReplFixture f;
  auto r = f.prism({"--json", "-c",
                    "open " + example("rms_linear") + "; equiv rms_linear matmul(X, W) / rms(X); "
                    "equiv rms_linear matmul(X, W) * rms(X) --expect refuted; egraph"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<nlohmann::json> objects = json_lines(r.out);
  REQUIRE(objects.size() == 4);
  CHECK(objects[1]["result"] == "proved");
  CHECK(objects[1]["stopReason"] == "goal reached");
  CHECK(objects[1]["explanation"].get<std::string>().find("matmul") != std::string::npos);
  CHECK(objects[2]["result"] == "refuted");
  CHECK(objects[2]["stopReason"] == "counterexample");
  CHECK(objects[2]["counterexample"]["maxAbsDiff"].get<double>() > 0);
  CHECK(objects[3]["nodes"].get<int>() > 0);
  // In words: over the reals, then in floats.
  auto words = f.prism({"--no-start", "-c", "equiv rms_linear matmul(X, W) / rms(X); equiv rms_linear matmul(X / rms(X), W)"});
  CHECK(words.out.find("proved over the reals (goal reached)") == 0);
  CHECK(words.out.find("refuted in floating point on opposite outliers over tiny values (X +H, W +H): at ") != std::string::npos);
  CHECK(words.out.find("the proof uses rules exact only over the reals: div-mul-swap") != std::string::npos);
  CHECK(words.out.find("equal in floating point on ") != std::string::npos);

  // A script's equiv is a claim: refuted (or unknown) fails it unless --expect says so.
  auto text = f.prism({"--no-start", "-c", "equiv rms_linear matmul(X, W) * rms(X); programs"});
  CHECK(text.exit_code == 1);
  CHECK(text.out.find("refuted (counterexample)") == 0);
  CHECK(text.out.find("they differ by") != std::string::npos);
  CHECK(text.out.find("PROGRAM") == std::string::npos);  // the script stopped there
  CHECK_THAT(text.err, Catch::Contains("-c:1:1: error: equiv: refuted, expected proved"));
  auto json_fail = f.prism({"--no-start", "--json", "-c", "equiv rms_linear matmul(X, W) * rms(X)"});
  CHECK(json_fail.exit_code == 1);
  auto failed = json_lines(json_fail.out);
  REQUIRE(failed.size() == 2);
  CHECK(failed[0]["result"] == "refuted");
  CHECK(failed[1]["error"]["message"] == "equiv: refuted, expected proved (--expect refuted accepts it)");

  auto shapes = f.prism({"--no-start", "-c", "equiv rms_linear sum(X, axis=-1) --expect refuted"});
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
  auto folded = f.prism({"--no-start", "-c", "explain rms_linear 1 --no-proof"});
  INFO(folded.err);
  CHECK(folded.exit_code == 0);
  CHECK(folded.out.find("kernel 0: custom") != std::string::npos);
  CHECK(folded.out.find("proof (e-graph") == std::string::npos);
  CHECK(folded.out.find("lines (`explain rms_linear 1` shows them)") != std::string::npos);
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
  // The second tune below must come from the DB even where a busy CI machine makes rounds disagree.
  f.extra_env["PRISM_TUNE_NOISE_LIMIT"] = "off";
  auto r = f.prism({"--json", "-c", "open " + example("rms_linear") + "; tune rms_linear n=4 d=64 --top 2; code rms_linear; export rms_linear " +
                                        (f.dir() / "k.cpp")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto lines = json_lines(r.out);
  REQUIRE(lines.size() == 4);
  const auto& tune = lines[1];
  // The protocol's result whole, in its camelCase names.
  for (const char* key : {"baselineMs", "bestMs", "speedup", "rooflineFraction", "rooflineBound", "targetModel", "bandwidthGBs", "best",
                          "target", "measured", "noisy"})
    CHECK(tune.contains(key));
  CHECK(tune["target"] == "cpu");
  CHECK(tune["bestMs"].get<double>() > 0);
  CHECK(tune["best"]["candidate"].is_number_integer());
  CHECK(tune["measured"]["rounds"].get<int>() >= 1);
  CHECK(lines[2]["candidate"] == tune["best"]["candidate"]);
  CHECK_THAT(lines[2]["source"].get<std::string>(), Catch::Contains("prism_entry"));
  CHECK(lines[3]["headerFile"] == f.dir() / "k.h");
  // The exported files compile on their own.
  auto cc = prism::test::run_process({"c++", "-std=c++17", "-O1", "-fopenmp", "-fPIC", "-shared", f.dir() / "k.cpp", "-o", f.dir() / "k.so", "-lopenblas"});
  INFO(cc.err);
  CHECK(cc.exit_code == 0);

  // The human table: one summary row, the timed rows, a second tune answered from the DB.
  auto text = f.prism({"-c", "tune rms_linear n=4 d=64 --top 2"});
  INFO(text.err);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("from the tuning DB (measured " + tune["measured"]["at"].get<std::string>().substr(0, 10)) != std::string::npos);
  CHECK(text.out.find("SPEEDUP") != std::string::npos);
  CHECK(text.out.find("ROOFLINE") != std::string::npos);
  CHECK(text.out.find("SPREAD") != std::string::npos);
  CHECK(text.out.find("interleaved rounds") != std::string::npos);
  // --fresh measures again.
  auto fresh = f.prism({"--json", "-c", "tune rms_linear n=4 d=64 --top 2 --fresh"});
  INFO(fresh.err);
  REQUIRE(fresh.exit_code == 0);
  auto again = json_lines(fresh.out);
  REQUIRE(again.size() == 1);
  CHECK_FALSE(again[0]["fromDb"].get<bool>());
  CHECK(again[0]["stats"]["instantiations"].get<int>() > 0);
  auto bad = f.prism({"-c", "tune rms_linear"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("missing binding") != std::string::npos);  // the daemon names the dims to give

  // The DB shared (issue 51): exported, imported twice by another daemon (the second joins the
  // same rows to the first: nothing new). Its first tune of the same question measures exactly the
  // claimed rows here before it serves them (issue 61, 3); the next is answered by the DB.
  const std::string db = f.dir() / "tune.db";
  auto exported = f.prism({"-c", "db export " + db});
  INFO(exported.err);
  REQUIRE(exported.exit_code == 0);
  CHECK_THAT(exported.out, Catch::Contains("wrote 1 tuning results to " + db));
  ReplFixture g;
  g.extra_env["PRISM_TUNE_NOISE_LIMIT"] = "off";  // the claim's measurement stored, even on a busy machine
  auto imported = g.prism({"--json", "-c", "db import " + db + "; db import " + db + "; open " + example("rms_linear") +
                                               "; tune rms_linear n=4 d=64 --top 2; tune rms_linear n=4 d=64 --top 2"});
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);
  auto merged = json_lines(imported.out);
  REQUIRE(merged.size() == 5);
  CHECK(merged[0]["added"] == 1);
  CHECK(merged[1]["added"] == 0);
  CHECK(merged[1]["merged"] == 1);
  CHECK_FALSE(merged[3]["fromDb"].get<bool>());
  CHECK_FALSE(merged[3]["measured"]["confirmed"].get<std::string>().empty());
  size_t claimed = 0;
  for (const auto& row : again[0]["rows"]) claimed += row["ok"].get<bool>();
  CHECK(merged[3]["rows"].size() == claimed);
  CHECK(merged[4]["fromDb"].get<bool>());
  CHECK(merged[4]["bestMs"] == merged[3]["bestMs"]);
}

// Issue 51: a model's programs as one batch (two programs at two sizes here; 3 x 2, on Dask too, in
// python/tests/test_batch.py). Every job is tuned and checked against the reference once; a second
// run is answered by the tuning DB and measures nothing; a job that fails is reported, the others
// go on, and the command fails.
TEST_CASE("batch tunes each program at each of its sizes once; a second run measures nothing", "[repl][e2e][tune][batch]") {
  ReplFixture f;
  f.extra_env["PRISM_TUNE_NOISE_LIMIT"] = "off";  // every result stored, even on a busy machine
  const std::string manifest = f.dir() / "model.json";
  nlohmann::json programs = nlohmann::json::array();
  for (const char* name : {"rms_linear", "gated_mlp"})
    programs.push_back({{"program", name}, {"file", example(name)}, {"bindings", {{{"n", 4}, {"d", 64}}, {{"n", 8}, {"d", 64}}}}});
  std::ofstream(manifest) << nlohmann::json{{"programs", programs}, {"top", 1}, {"targets", {"cpu"}}}.dump(2);
  auto first = f.prism({"--json", "-c", "batch " + manifest});
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const nlohmann::json r = json_lines(first.out).at(0);
  REQUIRE(r["jobs"].size() == 4);
  for (const auto& job : r["jobs"]) {
    INFO(job.dump());
    CHECK(job["status"] == "tuned");
    CHECK(job["result"]["bestMs"].get<double>() > 0);
    CHECK(job["result"]["rows"].at(0)["ok"].get<bool>());  // checked against the reference
  }
  auto second = f.prism({"-c", "batch " + manifest});
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  CHECK_THAT(second.out, Catch::Contains("4 jobs: 0 tuned, 4 answered by the tuning DB, 0 failed"));

  // A job that cannot run fails alone.
  programs.push_back({{"program", "rms_linear"}, {"bindings", {{{"n", 4}}}}});
  std::ofstream(manifest) << nlohmann::json{{"programs", programs}, {"top", 1}}.dump();
  auto broken = f.prism({"-c", "batch " + manifest});
  CHECK(broken.exit_code != 0);
  CHECK_THAT(broken.out, Catch::Contains("5 jobs: 0 tuned, 4 answered by the tuning DB, 1 failed"));
  CHECK_THAT(broken.out + broken.err, Catch::Contains("'d'"));
  auto bad = f.prism({"-c", "batch " + example("rms_linear")});
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.err, Catch::Contains("is not JSON"));
}

TEST_CASE("tune --check-with adds the user's data to the check, and the table names the sets checked", "[repl][e2e][tune][edge_suite]") {
  ReplFixture f;
  prism::Tensor x = prism::Tensor::zeros(prism::DType::F16, {4, 64});
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = float(i % 5) * 40 - 80;
  prism::write_npy(f.dir() / "x.npy", x);
  auto r = f.prism({"--json", "-c", "open " + example("rms_linear") + "; tune rms_linear n=4 d=64 --top 2 --check-with X=" + (f.dir() / "x.npy")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto lines = json_lines(r.out);
  REQUIRE(lines.size() == 2);
  const auto sets = lines[1]["edgeSets"].get<std::vector<std::string>>();
  CHECK(std::find(sets.begin(), sets.end(), "your data (X)") != sets.end());
  CHECK(std::find(sets.begin(), sets.end(), "std 100") != sets.end());
  CHECK(lines[1]["edgeNotes"].is_array());
  auto text = f.prism({"-c", "tune rms_linear n=4 d=64 --top 2"});
  INFO(text.err);
  CHECK(text.out.find("checked on the seeded inputs and ") != std::string::npos);
  auto bad = f.prism({"-c", "tune rms_linear n=4 d=64 --check-with X"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("--check-with wants INPUT=PATH, not 'X'") != std::string::npos);
  auto missing = f.prism({"-c", "tune rms_linear n=4 d=64 --check-with Y=" + (f.dir() / "x.npy")});
  CHECK(missing.exit_code != 0);
  CHECK(missing.err.find("has no input 'Y' to check with") != std::string::npos);
}

TEST_CASE("run prints and counts NaN and Inf; --json gives them as documented strings", "[repl][e2e][run]") {
  ReplFixture f;
  {
    std::ofstream file(f.dir() / "nf.prism");
    file << "program nonfinite(X: f32[n, d], g: f32[d]) {\n  Z = X - X\n  return Z / Z * g, 1 / Z, log(Z * X * X), X * g\n}\n";
  }
  auto r = f.prism({"-c", "open " + (f.dir() / "nf.prism") + "; run nonfinite n=2 d=3"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("NaN NaN NaN NaN NaN NaN"));
  CHECK_THAT(r.out, Catch::Contains("Inf Inf"));
  CHECK_THAT(r.out, Catch::Contains("-Inf -Inf"));
  CHECK_THAT(r.out, Catch::Contains("out0: 6 NaN of 6 values (not in the sums)"));
  CHECK_THAT(r.out, Catch::Contains("out1: 6 +Inf of 6 values"));
  CHECK_THAT(r.out, Catch::Contains("out2: 6 -Inf of 6 values"));
  CHECK(r.out.find("out3:") == std::string::npos);  // finite: no line

  auto j = f.prism({"--json", "-c", "run nonfinite n=2 d=3"});
  INFO(j.err);
  REQUIRE(j.exit_code == 0);
  auto lines = json_lines(j.out);
  REQUIRE(lines.size() == 1);
  const auto& outs = lines[0]["outputs"];
  REQUIRE(outs.size() == 4);
  CHECK(outs[0]["head"][0] == "NaN");
  CHECK(outs[0]["nonFinite"]["nan"] == 6);
  CHECK(outs[1]["head"][0] == "Infinity");
  CHECK(outs[1]["nonFinite"]["posInf"] == 6);
  CHECK(outs[2]["head"][0] == "-Infinity");
  CHECK(outs[2]["nonFinite"]["negInf"] == 6);
  CHECK(outs[0]["checksum"]["sum"] == 0.0);  // the sums leave them out
  CHECK(outs[3]["head"][0].is_number());
}

TEST_CASE("a script's errors say FILE:LINE:COLUMN, and --json prints them as objects on stdout", "[repl][e2e][errors]") {
  ReplFixture f;
  auto r = f.prism({"--json", "-c", "open " + example("rms_linear") + ";   run rms_linear n=0 d=64"});
  CHECK(r.exit_code == 1);
  auto lines = json_lines(r.out);
  REQUIRE(lines.size() == 2);
  const auto& error = lines[1]["error"];
  CHECK(error["file"] == "-c");
  CHECK(error["line"] == 1);
  const std::string line = "open " + example("rms_linear") + ";   run rms_linear n=0 d=64";
  CHECK(error["column"] == int(line.find("n=0")) + 1);
  CHECK(error["command"] == "run rms_linear n=0 d=64");
  CHECK_THAT(error["message"].get<std::string>(), Catch::StartsWith("binding 'n=0' wants DIM=POSITIVE_INTEGER"));
  CHECK_THAT(r.err, Catch::Contains("prism: -c:1:" + std::to_string(line.find("n=0") + 1) + ": error: binding 'n=0'"));

  // From a script file, a daemon's error: the command's line and column, and its JSON-RPC code.
  const std::string script = f.dir() / "s.prism";
  {
    std::ofstream file(script);
    file << "open " << example("rms_linear") << "\n\n  run rms_linear n=8\n";
  }
  auto s = f.prism({"--json", script});
  CHECK(s.exit_code == 1);
  auto objects = json_lines(s.out);
  REQUIRE(objects.size() == 2);
  CHECK(objects[1]["error"]["file"] == script);
  CHECK(objects[1]["error"]["line"] == 3);
  CHECK(objects[1]["error"]["column"] == 3);
  CHECK(objects[1]["error"]["code"].is_number_integer());
  CHECK_THAT(s.err, Catch::Contains(script + ":3:3: error: missing binding for dim 'd'"));
}

TEST_CASE("a daemon's error about a dim, an input, a program or a candidate points at the word that named it", "[repl][e2e][errors]") {
  ReplFixture f;
  REQUIRE(f.prism({"-c", "open " + example("gated_mlp")}).exit_code == 0);
  const std::string npy = f.dir() / "x.npy";
  struct Case {
    std::string command, word, message;
  };
  const std::vector<Case> cases = {
      {"tune gated_mlp n=8 h=4 d=64", "h=4", "'h' is not a dim of gated_mlp (its dims: n, d)"},
      {"run gated_mlp n=2 d=8 --in Q=" + npy, "Q=", "program 'gated_mlp' has no input 'Q'"},
      {"candidates gated_mlpp", "gated_mlpp", "unknown program 'gated_mlpp'; did you mean 'gated_mlp'?"},
      {"code gated_mlp 999 n=8 d=64", "999", "'gated_mlp' has no candidate 999"},
  };
  for (const Case& c : cases) {
    INFO(c.command);
    auto r = f.prism({"--json", "-c", c.command});
    CHECK(r.exit_code == 1);
    auto lines = json_lines(r.out);
    REQUIRE(lines.size() == 1);
    const auto& error = lines[0]["error"];
    CHECK_THAT(error["message"].get<std::string>(), Catch::StartsWith(c.message));
    CHECK(error["column"] == int(c.command.find(c.word)) + 1);
    CHECK_THAT(r.err, Catch::Contains("prism: -c:1:" + std::to_string(c.command.find(c.word) + 1) + ": error: "));
  }
}
