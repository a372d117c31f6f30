#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <sstream>

#include "engine/lang/op_signature.h"
#include "repl/commands.h"
#include "repl/format.h"
#include "repl/line_editor.h"
#include "repl/progress_bar.h"
#include "repl/script.h"
#include "support/subprocess.h"

using namespace prism::repl;

TEST_CASE("commands are split on newlines and semicolons", "[repl][script]") {
  CommandSplitter s;
  s.feed_text("open a.prism; show x\n\n  programs  \n# a comment\nrun x n=8 # trailing comment");
  auto cmds = s.finish();
  REQUIRE(cmds.size() == 4);
  CHECK(cmds[0].text == "open a.prism");
  CHECK(cmds[0].column == 1);
  CHECK(cmds[1].text == "show x");
  CHECK(cmds[1].column == 15);
  CHECK(cmds[2].text == "programs");
  CHECK(cmds[2].line == 3);
  CHECK(cmds[2].column == 3);
  CHECK(cmds[3].text == "run x n=8");
  CHECK(cmds[3].line == 5);
  CHECK(cmds[3].column == 1);
}

TEST_CASE("a program block is one command across lines, semicolons and comments", "[repl][script]") {
  CommandSplitter s;
  s.feed_line("show a");
  s.feed_line("program p(X: f32[n, d]) {  # a { brace in a comment");
  CHECK(s.pending());
  s.feed_line("  Y = exp(X); Z = Y * 2");
  s.feed_line("  return Z");
  CHECK(s.pending());
  s.feed_line("}; programs");
  CHECK_FALSE(s.pending());
  auto cmds = s.take();
  REQUIRE(cmds.size() == 3);
  CHECK(cmds[0].text == "show a");
  CHECK(is_program_block(cmds[1].text));
  CHECK(program_block_name(cmds[1].text) == "p");
  CHECK(cmds[1].line == 2);
  CHECK(cmds[1].text.find("Y = exp(X); Z = Y * 2") != std::string::npos);
  CHECK(cmds[2].text == "programs");
}

TEST_CASE("an unfinished block is handed over at the end of input", "[repl][script]") {
  CommandSplitter s;
  s.feed_text("program q(X: f32[n]) {\n  return X\n");
  CHECK(s.take().empty());
  auto cmds = s.finish();
  REQUIRE(cmds.size() == 1);
  CHECK(program_block_name(cmds[0].text) == "q");
}

TEST_CASE("words split on blanks with double quotes grouping", "[repl][script]") {
  CHECK(split_words("run  p n=8 --in \"X=my file.npy\"") ==
        std::vector<std::string>{"run", "p", "n=8", "--in", "X=my file.npy"});
  CHECK(split_words("   ").empty());
  CHECK_FALSE(is_program_block("programs"));
  CHECK(is_program_block("  program p() {}"));
}

TEST_CASE("the command table is the dispatch: every row names its handler, each its own", "[repl][help]") {
  std::vector<CommandSpec::Handler> handlers;  // member pointers compare only for equality
  for (const auto& c : command_table()) {
    INFO(c.name);
    CHECK(c.handler != nullptr);
    CHECK(std::find(handlers.begin(), handlers.end(), c.handler) == handlers.end());  // no row runs another's command
    handlers.push_back(c.handler);
  }
}

TEST_CASE("every command has help and unknown ones have none", "[repl][help]") {
  for (const auto& c : command_table()) {
    CHECK(help_for(c.name).find("usage: " + c.usage) == 0);
    CHECK(help_overview().find(c.usage.substr(0, c.usage.find(" [--"))) != std::string::npos);
  }
  CHECK(find_command("exit") == find_command("quit"));
  CHECK(help_for("frobnicate").empty());
  // At 80 columns, and at 60, every line of the help fits and every description is there whole.
  auto words = [](const std::string& text) {
    std::istringstream in(text);
    std::string out;
    for (std::string w; in >> w;) out += w + " ";
    return out;
  };
  for (int columns : {80, 60}) {
    for (const std::string& text : {help_overview(columns), help_for("ops", columns)}) {
      std::istringstream lines(text);
      for (std::string line; std::getline(lines, line);) {
        INFO(columns << " columns: " << line);
        CHECK(display_width(line) < size_t(columns));
      }
    }
    for (const auto& c : command_table()) CHECK(words(help_overview(columns)).find(words(c.summary)) != std::string::npos);
    for (const auto& [signature, summary] : prism::language_reference()) CHECK(words(help_for("ops", columns)).find(words(summary)) != std::string::npos);
  }
}

TEST_CASE("tables align columns and diagnostics point at the column", "[repl][format]") {
  Table t({"A", "LONGER"});
  t.add({"wide cell", "x"});
  CHECK(t.render("", 0) == "A          LONGER\nwide cell  x\n");
  // On a terminal of 30 columns the last column's free text is cut to fit (29 columns and "...").
  Table u({"SPEEDUP", "SUMMARY"});
  u.add({"4.76x", "1 custom kernel: matmul, silu, matmul, mul; grid g1 splits n"});
  u.add({"±3%", "short"});
  const std::string cut = u.render("", 30);
  CHECK(cut == "SPEEDUP  SUMMARY\n4.76x    1 custom kernel: ...\n±3%      short\n");
  // Help wraps instead, under the column's start.
  u.wrap_last();
  CHECK(u.render("", 30) ==
        "SPEEDUP  SUMMARY\n4.76x    1 custom kernel:\n         matmul, silu,\n         matmul, mul; grid g1\n         splits n\n±3%      short\n");

  nlohmann::json d = {{"range", {{"start", {{"line", 1}, {"character", 9}}}, {"end", {{"line", 1}, {"character", 10}}}}},
                      {"severity", 1},
                      {"message", "undefined name 'Z'"}};
  CHECK(diagnostic_text("f.prism", d, "program p(X: f32[n]) {\n  return Z\n}\n") ==
        "f.prism:2:10: error: undefined name 'Z'\n      return Z\n             ^");
  CHECK(tensor_type({{"dtype", "f16"}, {"shape", {"n", "d/2"}}}) == "f16[n, d/2]");
  CHECK(tensor_type({{"dtype", "f32"}, {"shape", {8, 64}}}) == "f32[8, 64]");
}

TEST_CASE("a table of long headers too wide for the terminal is printed as tables of its columns", "[repl][format]") {
  Table t({"GENERATED", "PRUNED: EXPRESSION", "DIMS", "STRUCTURE", "VERIFIED"});
  t.add({"46", "836013", "1656586", "575584", "6"});
  t.split_when_narrow();
  CHECK(t.render("", 0) == "GENERATED  PRUNED: EXPRESSION  DIMS     STRUCTURE  VERIFIED\n46         836013              1656586  575584     6\n");
  CHECK(t.render("", 40) == "GENERATED  PRUNED: EXPRESSION  DIMS\n46         836013              1656586\nSTRUCTURE  VERIFIED\n575584     6\n");
}

TEST_CASE("the progress bar fits its line in the terminal's columns", "[repl][format]") {
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = ::open_memstream(&text, &size);
  REQUIRE(out);
  {
    ProgressBar bar(out, 80);
    bar.update({{"kind", "begin"}, {"title", "tune gated_mlp"}});
    bar.update({{"kind", "report"},
                {"percentage", 40},
                {"message", "queued: waiting for another tune on this machine (prismd 123456: rms_linear d=4096 n=16 m=11008)"}});
    std::fflush(out);
    const std::string shown(text, size);
    const size_t last = shown.rfind("\r\033[K");
    REQUIRE(last != std::string::npos);
    const std::string line = shown.substr(last + 4);
    CHECK(line.size() <= 79);
    CHECK_THAT(line, Catch::StartsWith("tune gated_mlp [########............] queued: waiting"));
    CHECK_THAT(line, Catch::Contains("...  0.0 s"));
  }
  std::fclose(out);
  std::free(text);
}

TEST_CASE("path completion goes on into a directory and leaves hidden entries alone", "[repl][complete]") {
  prism::test::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/layers");
  std::filesystem::create_directories(dir.path() + "/.hidden");
  std::ofstream(dir.path() + "/lasso.prism") << "";
  const std::string base = dir.path() + "/";
  CHECK(path_candidates(base + "la") == std::vector<std::string>{base + "lasso.prism", base + "layers/"});
  CHECK(path_candidates(base + "lay") == std::vector<std::string>{base + "layers/"});
  CHECK(path_candidates(base) == std::vector<std::string>{base + "lasso.prism", base + "layers/"});
  CHECK(path_candidates(base + ".h") == std::vector<std::string>{base + ".hidden/"});
  CHECK(path_candidates(base + "nothing/x").empty());
}

TEST_CASE("candidates: the clauses every family shares are said once, each row keeps what tells it apart", "[repl][format]") {
  const SharedClauses s = shared_clauses({"1 custom kernel: matmul, exp, sum; grid g1 splits B; loop F1 over s",
                                          "1 custom kernel: matmul, exp, sum; grid g1 splits B; grid g2 splits q",
                                          "1 custom kernel: matmul, exp, sum; grid g1 splits B"});
  CHECK(s.shared == "1 custom kernel: matmul, exp, sum; grid g1 splits B");
  CHECK(s.rest == std::vector<std::string>{"loop F1 over s", "grid g2 splits q", "(only the shared clauses)"});
  // Causal attention's families (issue 49): no clause is shared by all, but every op list begins
  // alike; each row keeps the ops after that start and its own clauses.
  const SharedClauses ops = shared_clauses({"1 custom kernel: matmul, sqrt, div, add, max, sub, exp, sum, div, matmul",
                                            "1 custom kernel: matmul, sqrt, div, add, max, sub, exp, sum, matmul, div; grid g1 splits B",
                                            "2 custom kernels: matmul, sqrt, div, add, max, sub, exp, sum, matmul, div; grid g1 reduces s"});
  CHECK(ops.shared == "ops begin matmul, sqrt, div, add, max, sub, exp, sum (… below)");
  CHECK(ops.rest == std::vector<std::string>{"1 custom kernel: …div, matmul", "1 custom kernel: …matmul, div; grid g1 splits B",
                                             "2 custom kernels: …matmul, div; grid g1 reduces s"});
  // Two shared ops are not worth a line; a summary without an op list leaves every row whole.
  CHECK(shared_clauses({"1 custom kernel: a, b, c", "1 custom kernel: a, b, d"}).shared.empty());
  CHECK(shared_clauses({"1 custom kernel: a, b, c, d", "library matmul"}).rest[0] == "1 custom kernel: a, b, c, d");
  const SharedClauses one = shared_clauses({"2 custom kernels: a; b"});
  CHECK(one.shared.empty());
  CHECK(one.rest == std::vector<std::string>{"2 custom kernels: a; b"});
}
