#include "protocol/convert.h"

#include <cmath>
#include <cstdio>

#include "protocol/params.h"
#include "protocol/uri.h"

namespace prism::protocol {

namespace {

int severity_code(Severity s) {
  switch (s) {
    case Severity::Error: return 1;
    case Severity::Warning: return 2;
    case Severity::Info: return 3;
  }
  return 1;
}

json tensors_json(const std::vector<TensorView>& tensors) {
  json out = json::array();
  for (const auto& t : tensors) out.push_back(tensor_json(t));
  return out;
}

int64_t non_negative(const json& obj, const std::string& key, int64_t fallback) {
  auto v = optional_int(obj, key);
  if (!v) return fallback;
  if (*v < 0) throw invalid_params(key, "'" + key + "' must not be negative");
  return *v;
}

}  // namespace

std::string file_param(const json& value, const std::string& field) {
  if (!value.is_string()) throw invalid_params(field, "'" + field + "' must be a string (a path or file:// URI)");
  auto path = local_path(value.get<std::string>());
  if (!path || path->empty()) throw invalid_params(field, "'" + field + "' must be a path or a file:// URI");
  return *path;
}

json position_json(Position p) { return json{{"line", p.line}, {"character", p.character}}; }

json range_json(const Range& r) { return json{{"start", position_json(r.start)}, {"end", position_json(r.end)}}; }

json diagnostics_json(const Diagnostics& diagnostics, const std::string& text, PositionEncoding encoding) {
  LineIndex index(text);
  json out = json::array();
  for (const auto& d : diagnostics) {
    Range r{index.from_source(d.range.begin, encoding), index.from_source(d.range.end, encoding)};
    out.push_back(json{{"range", range_json(r)},
                       {"severity", severity_code(d.severity)},
                       {"source", "prism"},
                       {"message", d.message}});
  }
  return out;
}

json document_state_json(const DocumentState& state, const std::string& text, PositionEncoding encoding) {
  json out{{"uri", state.uri},
           {"version", state.version},
           {"programs", state.programs},
           {"diagnostics", diagnostics_json(state.diagnostics, text, encoding)}};
  if (!state.replaced.empty()) out["replaced"] = state.replaced;
  return out;
}

json tensor_json(const TensorView& tensor) {
  json out{{"name", tensor.name}, {"dtype", tensor.dtype}, {"shape", tensor.shape}};
  if (!tensor.op.empty()) out["op"] = tensor.op;
  if (!tensor.domain.empty()) out["domain"] = tensor.domain;
  return out;
}

json summary_json(const ProgramSummary& program) {
  return json{{"name", program.name},
              {"uri", program.uri},
              {"dims", program.dims},
              {"inputs", tensors_json(program.inputs)},
              {"outputs", tensors_json(program.outputs)}};
}

json detail_json(const ProgramDetail& program) {
  return json{{"name", program.summary.name},
              {"uri", program.summary.uri},
              {"signature", program.signature},
              {"dims", program.summary.dims},
              {"inputs", tensors_json(program.summary.inputs)},
              {"values", tensors_json(program.values)},
              {"outputs", tensors_json(program.summary.outputs)},
              {"lowered", program.lowered}};
}

json error_data(const Error& e) { return e.subject().empty() ? json(nullptr) : json{{"subject", e.subject()}}; }

json number_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

json run_result_json(const RunResult& result) {
  json outputs = json::array();
  for (const auto& o : result.outputs) {
    json head = json::array();
    for (double v : o.head) head.push_back(number_json(v));
    json out{{"name", o.name},
             {"dtype", o.dtype},
             {"shape", o.shape},
             {"checksum", {{"sum", o.sum}, {"absSum", o.abs_sum}}},
             {"nonFinite", {{"nan", o.nan}, {"posInf", o.pos_inf}, {"negInf", o.neg_inf}}},
             {"head", std::move(head)}};
    if (!o.file.empty()) out["file"] = o.file;
    outputs.push_back(std::move(out));
  }
  json bindings = json::object();
  for (const auto& [name, value] : result.bindings) bindings[name] = value;
  return json{{"program", result.program},
              {"bindings", std::move(bindings)},
              {"elapsedMs", result.elapsed_ms},
              {"outputs", std::move(outputs)},
              {"randomInputs", result.random_inputs}};
}

std::map<std::string, int64_t> parse_bindings(const json& params) {
  std::map<std::string, int64_t> out;
  if (const json* bindings = optional_object(params, "bindings")) {
    for (const auto& [name, value] : bindings->items()) {
      std::string field = "bindings." + name;
      auto v = optional_int(*bindings, name, "bindings");
      if (!v) throw invalid_params(field, "'" + field + "' must be an integer");
      if (*v < 1) throw invalid_params(field, "'" + field + "' must be a positive integer");
      out[name] = *v;
    }
  }
  return out;
}

RunRequest parse_run_request(const json& raw) {
  const json& params = params_object(raw);
  RunRequest request;
  request.program = require_string(params, "program");
  request.bindings = parse_bindings(params);
  request.seed = static_cast<uint64_t>(non_negative(params, "seed", 0));
  request.head = static_cast<size_t>(non_negative(params, "head", 8));
  if (const json* inputs = optional_object(params, "inputs")) {
    for (const auto& [name, value] : inputs->items()) request.input_files[name] = file_param(value, "inputs." + name);
  }
  if (const json* output = find_field(params, "output")) request.output_file = file_param(*output, "output");
  return request;
}

EquivLimits parse_equiv_limits(const json& params) {
  EquivLimits limits;
  const json* given = optional_object(params, "limits");
  if (!given) return limits;
  if (auto n = optional_int(*given, "nodes", "limits")) {
    if (*n < 1) throw invalid_params("limits.nodes", "'limits.nodes' must be a positive integer");
    limits.node_limit = static_cast<size_t>(*n);
  }
  if (auto n = optional_int(*given, "iterations", "limits")) {
    if (*n < 1) throw invalid_params("limits.iterations", "'limits.iterations' must be a positive integer");
    limits.iter_limit = static_cast<size_t>(*n);
  }
  if (auto s = optional_number(*given, "seconds", "limits")) {
    if (!(*s > 0)) throw invalid_params("limits.seconds", "'limits.seconds' must be a positive number");
    limits.time_limit_s = *s;
  }
  return limits;
}

json equiv_result_json(const EquivResult& r) {
  const char* result = r.verdict == EquivResult::Verdict::Proved    ? "proved"
                       : r.verdict == EquivResult::Verdict::Refuted ? "refuted"
                                                                    : "unknown";
  json out = {{"result", result}, {"stopReason", stop_reason_name(r.stop_reason)}, {"a", r.a_text}, {"b", r.b_text}};
  if (!r.explanation.empty()) out["explanation"] = r.explanation;
  if (!r.message.empty()) out["message"] = r.message;
  if (r.counterexample) {
    json bindings = json::object();
    for (const auto& [name, value] : r.counterexample->bindings) bindings[name] = value;
    out["counterexample"] = {{"bindings", std::move(bindings)}, {"seed", r.counterexample->seed}, {"detail", r.counterexample->detail}};
    // Outputs of different shapes differ without a finite distance (JSON has no infinity).
    if (std::isfinite(r.counterexample->max_abs_diff)) out["counterexample"]["maxAbsDiff"] = r.counterexample->max_abs_diff;
  }
  // "result" is over the reals; floats are judged apart (docs/design.md, "Numerics").
  if (r.floating.ran) {
    out["floatingPoint"] = {{"result", r.floating.refuted ? "refuted" : "equal"}, {"inputs", r.floating.inputs}};
    if (r.floating.refuted) out["floatingPoint"].update({{"set", r.floating.set}, {"detail", r.floating.detail}});
  }
  if (!r.reals_only_rules.empty()) out["realsOnlyRules"] = r.reals_only_rules;
  return out;
}

json egraph_stats_json(const EGraphStats& s) {
  json rules = json::array();
  for (const auto& r : s.rules)
    rules.push_back({{"name", r.name}, {"matches", r.matches}, {"applications", r.applications}, {"timeMs", r.time_ms}});
  json out = {{"nodes", s.nodes},           {"classes", s.classes},         {"memoryBytes", s.memory_bytes},
              {"nodeCap", s.node_cap},      {"capHit", s.cap_hit},          {"programs", s.programs},
              {"termsAdded", s.terms_added}, {"termsShared", s.terms_shared}, {"rules", std::move(rules)}};
  if (!s.cap_message.empty()) out["capMessage"] = s.cap_message;
  return out;
}

std::optional<pipeline::Pass> parse_dump_param(const json& params, pipeline::Stage stage) {
  const std::optional<std::string> name = optional_string(params, "dumpAfter");
  if (!name) return std::nullopt;
  const char* method = stage == pipeline::Stage::Search ? "search/run" : "kernel/source";
  const std::string theirs = "; " + std::string(method) + " runs " + pipeline::pass_names(stage);
  const std::optional<pipeline::Pass> pass = pipeline::parse_pass(*name);
  if (!pass) throw invalid_params("dumpAfter", "no pass is named '" + *name + "'" + theirs);
  if (pipeline::stage_of(*pass) != stage)
    throw invalid_params("dumpAfter", "'" + *name + "' runs " +
                                          (stage == pipeline::Stage::Search ? "when a kernel is made (kernel/source, the REPL's `code`)"
                                                                            : "in the search (search/run, the REPL's `search`)") +
                                          theirs);
  return pass;
}

json dump_json(const pipeline::Dump& dump) {
  return {{"pass", pipeline::pass_name(dump.after())}, {"items", dump.items()}, {"dropped", dump.dropped()}};
}

SearchLimits parse_search_limits(const json& params) {
  SearchLimits limits;
  const json* given = optional_object(params, "limits");
  if (!given) return limits;
  // An integer limit within [low, high]; `range` says which in the error.
  auto bounded = [&](const char* key, int& into, int low, int high, const char* range) {
    if (auto v = optional_int(*given, key, "limits")) {
      if (*v < low || *v > high) throw invalid_params(std::string("limits.") + key, std::string("'limits.") + key + "' must be " + range);
      into = static_cast<int>(*v);
    }
  };
  for (auto [key, into] : {std::pair{"maxOps", &limits.max_block_ops}, {"maxKernels", &limits.max_kernels},
                           {"maxAccumulators", &limits.max_accumulators}, {"threads", &limits.threads}})
    bounded(key, *into, 1, 1000, "between 1 and 1000");
  bounded("libraryKernels", limits.library_kernels, 0, 3, "0 to 3");
  bounded("kernelCuts", limits.kernel_cuts, 0, 3, "0 to 3");
  if (auto s = optional_number(*given, "budgetSeconds", "limits")) {
    if (!(*s > 0)) throw invalid_params("limits.budgetSeconds", "'limits.budgetSeconds' must be a positive number");
    limits.budget_s = *s;
  }
  if (const json* prune = find_field(*given, "prune")) {
    if (!prune->is_boolean()) throw invalid_params("limits.prune", "'limits.prune' must be true or false");
    limits.prune = prune->get<bool>();
  }
  return limits;
}

json search_stats_json(const SearchStats& s) {
  return {{"generated", s.generated},       {"prunedExpression", s.pruned_expression},
          {"prunedDims", s.pruned_dims},     {"prunedStructure", s.pruned_structure},
          {"prunedHardware", s.pruned_hardware}, {"duplicates", s.duplicates},
          {"verified", s.verified},          {"rejected", s.rejected},
          {"unproved", s.unproved},          {"fingerprinted", s.fingerprinted},
          {"fingerprintRejected", s.fingerprint_rejected}, {"fingerprintSeconds", s.fingerprint_s},
          {"generateSeconds", s.generate_s},
          {"verifySeconds", s.verify_s},     {"totalSeconds", s.total_s},
          {"stopReason", search_stop_name(s.stop_reason)},     {"emptyReason", s.empty_reason},
          {"fromStore", s.from_store}};
}

json search_summary_json(const SearchResult& r) {
  json limits = {{"maxOps", r.limits.max_block_ops}, {"maxKernels", r.limits.max_kernels},
                 {"maxAccumulators", r.limits.max_accumulators}, {"libraryKernels", r.limits.library_kernels}, {"kernelCuts", r.limits.kernel_cuts}, {"threads", r.limits.threads},
                 {"budgetSeconds", r.limits.budget_s}, {"prune", r.limits.prune}};
  return {{"program", r.program}, {"version", r.version}, {"stats", search_stats_json(r.stats)},
          {"limits", std::move(limits)}, {"candidates", r.candidates.size()}};
}

json candidate_json(const Candidate& c) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(c.hash));
  return {{"id", c.id},           {"kernels", c.kernels},   {"text", c.text()},   {"summary", c.summary},
          {"parameters", c.parameters}, {"verified", c.verified}, {"proof", c.proof}, {"hash", hash}};
}

}  // namespace prism::protocol
