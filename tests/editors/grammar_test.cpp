// The VS Code extension's TextMate grammar (editors/vscode/syntaxes) names every op and keyword
// argument of the language: a new op or argument is coloured without anyone remembering the
// grammar. (`npm test` in editors/vscode checks the grammar's scopes with VS Code's tokenizer.)
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>

#include "engine/lang/op_signature.h"
#include "engine/util/private_files.h"
#include "support/subprocess.h"

namespace {

// The alternatives of the first "\b(a|b|c)" group of a pattern.
std::set<std::string> alternatives(const std::string& pattern) {
  const size_t begin = pattern.find("\\b(") + 3, end = pattern.find(')', begin);
  std::set<std::string> out;
  std::string word;
  for (size_t i = begin; i <= end; ++i) {
    if (i == end || pattern[i] == '|') out.insert(std::exchange(word, ""));
    else word += pattern[i];
  }
  return out;
}

}  // namespace

TEST_CASE("the TextMate grammar names every op and keyword argument", "[editors]") {
  const std::string path = prism::test::source("editors/vscode/syntaxes/prism.tmLanguage.json");
  const auto grammar = nlohmann::json::parse(prism::read_regular_file(path, size_t(1) << 20).bytes.value_or("{}"));
  const auto& repository = grammar.at("repository");

  std::set<std::string> ops(prism::op_names().begin(), prism::op_names().end());
  for (const prism::SpelledCall& c : prism::spelled_calls()) ops.insert(c.name);
  CHECK(alternatives(repository.at("op").at("match")) == ops);

  std::set<std::string> arguments;
  for (const std::string& name : prism::op_names())
    for (const prism::ParamSpec& p : prism::op_params(*prism::op_from_name(name)))
      if (p.kind != prism::ArgKind::Tensor) arguments.insert(p.name);
  // PyTorch's names for axis and keepdims, and clamp's bounds (engine/lang/build_ir.cpp).
  arguments.insert({"dim", "keepdim", "min", "max"});
  CHECK(alternatives(repository.at("argument").at("match")) == arguments);
}
