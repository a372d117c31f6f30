// tune/run (long, with $/progress), tune/results and kernel/source.
#include <cstdio>

#include "protocol/convert.h"
#include "protocol/params.h"
#include "protocol/progress.h"
#include "protocol/server.h"

namespace prism::protocol {

void Server::tune(const SessionPtr& session, const Incoming& message) {
  const json& params = params_object(message.params);
  std::string program = require_string(params, "program");
  tune::TuneRequest request = parse_tune_request(params);
  json token = work_done_token(params);
  long_request(session, message, {program}, [this, session, program, request, token](const CancelToken& cancel) {
    WorkDoneProgress progress(session, token);
    progress.begin("tune " + program, "preparing");
    tune::TuneResult result = workspace_.tune(program, request, &cancel, [&](const tune::TuneProgress& p) {
      char text[128];
      if (p.total > 0) std::snprintf(text, sizeof text, "%s %d/%d", p.phase.c_str(), p.done, p.total);
      else std::snprintf(text, sizeof text, "%s", p.phase.c_str());
      int percent = p.total > 0 ? 100 * p.done / p.total : 0;
      progress.report(text, percent, {{"phase", p.phase}, {"done", p.done}, {"total", p.total}, {"elapsedSeconds", p.elapsed_s}});
    });
    char done[160];
    if (result.best >= 0) std::snprintf(done, sizeof done, "best %.3f ms, %.2fx the eager baseline", result.best_ms, result.speedup);
    else std::snprintf(done, sizeof done, "no candidate passed");
    progress.end(done);
    return tune_result_json(result);
  });
}

json Server::tune_results(const json& raw) {
  const json& params = params_object(raw);
  std::string program = require_string(params, "program");
  json results = json::array();
  for (const auto& r : workspace_.tune_results(program)) results.push_back(tune_result_json(r));
  return {{"program", program}, {"results", std::move(results)}};
}

void Server::kernel_source(const SessionPtr& session, const Incoming& message) {
  const json& params = params_object(message.params);
  std::string program = require_string(params, "program");
  auto candidate = optional_int(params, "candidate").value_or(0);
  if (candidate < 0) throw invalid_params("candidate", "'candidate' must be a candidate id (1, 2, …)");
  std::map<std::string, int64_t> bindings = parse_bindings(params);
  const backend::Target target = parse_target_param(params);
  // It may search and describe the CPU first: off the I/O thread.
  long_request(session, message, {program}, [this, program, candidate, bindings, target](const CancelToken&) {
    return kernel_source_json(workspace_.kernel_source(program, static_cast<int>(candidate), bindings, target));
  });
}

}  // namespace prism::protocol
