// prismd driven by Neovim's own LSP client, headless (issue 15): diagnostics on open that clear
// once the buffer is fixed, hover, completion, definition, document symbols, inlay hints,
// signature help, code lenses (a lens's command run through workspace/executeCommand) and
// formatting,
// with no prism-specific Lua beyond vim.lsp.start_client (tests/editors/nvim_lsp.lua).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/util/private_files.h"
#include "support/subprocess.h"

using nlohmann::json;
using prism::test::TempDir;

namespace {

std::string read_file(const std::string& path) { return prism::read_regular_file(path, size_t(16) << 20).bytes.value_or(""); }

}  // namespace

TEST_CASE("Neovim's built-in LSP client gets diagnostics, hover, completion, definition, symbols, hints, signatures, lenses and formatting", "[editors][lsp][nvim]") {
  // scripts/setup.sh installs Debian's neovim (0.7): CI always has it.
  {
    INFO("nvim is not installed: run scripts/setup.sh");
    REQUIRE(prism::test::run_process({"sh", "-c", "command -v nvim"}).exit_code == 0);
  }
  TempDir dir;
  std::filesystem::create_directories(dir / "state");
  {
    std::ofstream file(dir / "rms.prism");
    file << "# tune: n=2 d=16\nprogram rms_linear(X: f16[n, d], W: f16[d, d]) {\n  Y = rms_nrm(X)\n  return matmul(Y, W)\n}\n";
  }
  const std::map<std::string, std::string> env = {
      {"PRISMD", prism::test::bin("prismd")}, {"PRISM_FILE", dir / "rms.prism"}, {"PRISM_STATE", dir / "state"},
      {"PRISM_OUT", dir / "out.json"},        {"XDG_STATE_HOME", dir / "nvim"},  {"XDG_CACHE_HOME", dir / "nvim"},
      {"XDG_DATA_HOME", dir / "nvim"},         {"XDG_CONFIG_HOME", dir / "nvim"}};
  auto r = prism::test::run_process({"nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c",
                                     "luafile " + prism::test::source("tests/editors/nvim_lsp.lua")},
                                    "", env, std::chrono::seconds(90));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json seen = json::parse(read_file(dir / "out.json"));
  INFO(seen.dump(2));
  CHECK_FALSE(seen.contains("error"));
  CHECK(seen["started"] == true);
  CHECK(seen["diagnostics_on_open"] == 1);
  CHECK(seen["first_diagnostic_line"] == 2);
  CHECK_THAT(seen["first_diagnostic"].get<std::string>(), Catch::Contains("unknown op 'rms_nrm'"));
  CHECK(seen["diagnostics_after_fix"] == 0);
  CHECK_THAT(seen["hover"].get<std::string>(), Catch::Contains("Y: f16[n, d]") && Catch::Contains("computed by `rms_norm`"));
  const std::vector<std::string> completion = seen["completion"];
  for (const char* label : {"matmul", "rms_norm", "softmax", "X", "W", "Y", "n"})
    CHECK(std::find(completion.begin(), completion.end(), label) != completion.end());
  CHECK(seen["definition_line"] == 2);
  CHECK(seen["symbols"] == json::array({"rms_linear"}));
  CHECK(seen["inlay_hints"] == json::array({": f16[n, d]"}));
  CHECK(seen["signature"] == "matmul(a, b)");
  CHECK(seen["active_parameter"] == 1);
  CHECK(seen["lenses"] == json::array({"search", "tune n=2 d=16"}));
  CHECK(seen["search_candidates"].get<int>() > 0);
  CHECK(seen["formatted_line"] == "  return matmul(Y, W)");
  REQUIRE(seen["lenses_after_search"].size() == 2);
  CHECK_THAT(seen["lenses_after_search"][0].get<std::string>(), Catch::Contains("verified famil") && Catch::Contains("searched in"));
  // Normal start-up writes nothing to stderr, which Neovim would log as [ERROR].
  const std::string log = read_file(dir / "nvim/nvim/lsp.log");
  CHECK(log.find("[ERROR]") == std::string::npos);
}
