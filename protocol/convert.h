// Engine values as protocol JSON (docs/protocol.md), and program/run params as a RunRequest.
#pragma once
#include <string>

#include "engine/pipeline.h"
#include "engine/workspace/workspace.h"
#include "protocol/jsonrpc.h"
#include "protocol/positions.h"

namespace prism::protocol {

json position_json(Position p);
json range_json(const Range& r);
// {range, severity, source: "prism", message}; `text` is the document the positions refer to.
json diagnostics_json(const Diagnostics& diagnostics, const std::string& text, PositionEncoding encoding);
json document_state_json(const DocumentState& state, const std::string& text, PositionEncoding encoding);

json tensor_json(const TensorView& tensor);
json summary_json(const ProgramSummary& program);
json detail_json(const ProgramDetail& program);
// An engine error's `data`: {subject} when it names what in the request it is about, else null.
json error_data(const Error& e);
// A double as JSON: a number, or "NaN", "Infinity", "-Infinity" (JSON has no such numbers).
json number_json(double v);
json run_result_json(const RunResult& result);

// Validates program/run params; failures are InvalidParams naming the field ("bindings.n").
// `bindings: {dim: positive integer}` of a params object ({} when absent).
std::map<std::string, int64_t> parse_bindings(const json& params);
RunRequest parse_run_request(const json& params);

// program/equivalent's `limits` ({nodes, iterations, seconds}, each optional and positive).
EquivLimits parse_equiv_limits(const json& params);
// {result: "proved"|"refuted"|"unknown", stopReason, a, b, explanation?, counterexample?, message?}
json equiv_result_json(const EquivResult& result);
json egraph_stats_json(const EGraphStats& stats);

// search/run's `limits` ({maxOps, maxKernels, maxAccumulators, threads, budgetSeconds, prune}).
SearchLimits parse_search_limits(const json& params);
json search_stats_json(const SearchStats& stats);
// `dumpAfter`: a pass of `stage` (pipeline.h), none when absent; InvalidParams naming the stage's
// passes for an unknown one or another stage's.
std::optional<pipeline::Pass> parse_dump_param(const json& params, pipeline::Stage stage);
// {pass, items: [text], dropped}: what the pass left.
json dump_json(const pipeline::Dump& dump);
// search/run's answer: {program, version, stats, limits, candidates: N}.
json search_summary_json(const SearchResult& result);
// One family: {id, kernels, text, summary, parameters, verified, proof, hash (16 hex digits)}.
json candidate_json(const Candidate& candidate);

// A local file named by a plain path or a file:// URI; InvalidParams naming `field` otherwise.
std::string file_param(const json& value, const std::string& field);

// tune/run, tune/results, kernel/source (convert_tune.cpp).
// The "target" param ("cpu" when absent); InvalidParams naming the targets for an unknown one.
backend::Target parse_target_param(const json& params);
tune::TuneRequest parse_tune_request(const json& params);
json tune_result_json(const tune::TuneResult& result);
// `for_export`: the source an export writes (its C ABI named after `symbol`), else as generated.
json kernel_source_json(const tune::KernelSource& source, bool for_export = false);
// The kernel (kernel_source_json without its source and header) and its shared object's path.
json kernel_library_json(const tune::KernelLibrary& library);
json target_status_json(const std::vector<tune::TargetStatus>& targets);

}  // namespace prism::protocol
