#include "engine/pipeline.h"

namespace prism::pipeline {

const std::vector<PassInfo>& passes() {
  static const std::vector<PassInfo> table = {
      {Pass::Parse, Stage::Search, "parse", "text", "program", "compile_text: lex, parse, build_program (lang/compile.h)"},
      {Pass::Normalize, Stage::Search, "normalize", "program", "program", "lower_composites (ir/lower_composites.h)"},
      {Pass::NameSizes, Stage::Search, "name-sizes", "program", "program", "symbolize_sizes (ir/symbolize_sizes.h)"},
      {Pass::SearchForm, Stage::Search, "search-form", "program", "program",
       "search_form: drop_casts, push_transposes, regroup_layouts, raise_ranks (search/search.cpp)"},
      {Pass::Saturate, Stage::Search, "saturate", "program", "e-graph", "ProgramExpressions (search/expression.h)"},
      {Pass::Enumerate, Stage::Search, "enumerate", "e-graph", "computations", "program_dag, Generator::run (search/dag.h, generator.h)"},
      {Pass::Prune, Stage::Search, "prune", "computation x plan", "families", "build_family, sgraph::analyze, memory_lower_bound (search/search.cpp)"},
      {Pass::Verify, Stage::Search, "verify", "family", "proved family", "FingerprintCheck, NumericCheck, Prover (search/search.cpp)"},
      {Pass::FixSizes, Stage::Search, "fix-sizes", "family", "family", "sgraph::substitute_dims (sgraph/substitute_dims.h)"},
      {Pass::Instantiate, Stage::Kernel, "instantiate", "family x sizes", "instance", "sgraph::instantiate (sgraph/instantiate.h)"},
      {Pass::Lower, Stage::Kernel, "lower", "instance", "kernel IR", "Backend::kernel_ir: backend::lower and the backend's rewrites"},
      {Pass::Print, Stage::Kernel, "print", "kernel IR", "source", "Backend::generate (backend/backend.h)"},
  };
  return table;
}

const char* pass_name(Pass pass) {
  for (const PassInfo& p : passes())
    if (p.pass == pass) return p.name;
  return "?";
}

std::optional<Pass> parse_pass(std::string_view name) {
  for (const PassInfo& p : passes())
    if (name == p.name) return p.pass;
  return std::nullopt;
}

std::string pass_names(Stage stage) {
  std::string names;
  for (const PassInfo& p : passes())
    if (p.stage == stage) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

Stage stage_of(Pass pass) {
  for (const PassInfo& p : passes())
    if (p.pass == pass) return p.stage;
  return Stage::Search;
}

void Dump::add(Pass pass, const std::function<std::string()>& text) {
  if (pass != after_) return;
  std::lock_guard lock(mutex_);
  if (items_.size() >= limit_) {
    ++dropped_;
    return;
  }
  items_.push_back(text());
}

std::vector<std::string> Dump::items() const {
  std::lock_guard lock(mutex_);
  return items_;
}

size_t Dump::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

}  // namespace prism::pipeline
