// search/run (long, with $/progress) and search/candidates.
#include <cstdio>

#include "protocol/convert.h"
#include "protocol/params.h"
#include "protocol/progress.h"
#include "protocol/server.h"

namespace prism::protocol {

namespace {
std::string counts(const SearchProgress& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "generated %llu, pruned %llu, verified %llu",
                static_cast<unsigned long long>(p.generated), static_cast<unsigned long long>(p.pruned),
                static_cast<unsigned long long>(p.verified));
  return buf;
}
}  // namespace

void Server::search(const SessionPtr& session, const Incoming& message) {
  const json& params = params_object(message.params);
  start_search(session, message, params, work_done_token(params));
}

void Server::start_search(const SessionPtr& session, const Incoming& message, const json& params, json token) {
  std::string program = require_string(params, "program");
  SearchLimits limits = parse_search_limits(params);
  const std::optional<pipeline::Pass> dump_after = parse_dump_param(params, pipeline::Stage::Search);
  if (!token.is_null() && message.id) session->bind_progress(token, *message.id);
  long_request(session, message, {program}, [this, session, program, limits, token, dump_after](const CancelToken& cancel) {
    std::optional<pipeline::Dump> dump;
    if (dump_after) dump.emplace(*dump_after);
    WorkDoneProgress progress(session, token);
    progress.begin("search " + program, "generating");
    SearchResult result = workspace_.search(program, limits, &cancel, [&](const SearchProgress& p) {
      int percent = limits.budget_s > 0 ? static_cast<int>(100 * p.elapsed_s / limits.budget_s) : 0;
      progress.report(counts(p), percent,
                      {{"generated", p.generated}, {"pruned", p.pruned}, {"verified", p.verified}, {"elapsedSeconds", p.elapsed_s}});
    }, dump ? &*dump : nullptr);
    json summary = search_summary_json(result);
    if (dump) summary["dump"] = dump_json(*dump);
    progress.end(std::to_string(result.candidates.size()) + " verified " +
                     (result.candidates.size() == 1 ? "family" : "families") + " (" + search_stop_name(result.stats.stop_reason) +
                     (result.stats.from_store ? ", stored" : "") + ")",
                 {{"stats", summary["stats"]}});
    refresh_lenses();
    return summary;
  });
}

json Server::candidates(const json& raw) {
  const json& params = params_object(raw);
  std::string program = require_string(params, "program");
  workspace_.show(program);  // NotFound (with the known names) for an unknown program
  auto result = workspace_.search_result(program);
  if (!result)
    throw RpcFailure(kRequestFailed, "no search results for '" + program +
                                         "' at its current version; run search/run first");
  json families = json::array();
  for (const auto& c : result->candidates) families.push_back(candidate_json(c));
  return {{"program", result->program}, {"version", result->version}, {"stats", search_stats_json(result->stats)},
          {"candidates", std::move(families)}};
}

}  // namespace prism::protocol
