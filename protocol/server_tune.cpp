// tune/run (long, with $/progress), tune/results, kernel/source and kernel/library.
#include <cstdio>

#include "engine/tune/backends.h"
#include "protocol/convert.h"
#include "protocol/params.h"
#include "protocol/progress.h"
#include "protocol/server.h"

namespace prism::protocol {

void Server::tune(const SessionPtr& session, const Incoming& message) {
  const json& params = params_object(message.params);
  start_tune(session, message, params, work_done_token(params));
}

void Server::start_tune(const SessionPtr& session, const Incoming& message, const json& params, json token) {
  std::string program = require_string(params, "program");
  tune::TuneRequest request = parse_tune_request(params);
  if (!token.is_null() && message.id) session->bind_progress(token, *message.id);
  long_request(session, message, {program}, [this, session, program, request, token](const CancelToken& cancel) {
    WorkDoneProgress progress(session, token);
    progress.begin("tune " + program, "preparing");
    tune::TuneResult result = workspace_.tune(program, request, &cancel, [&](const tune::TuneProgress& p) {
      // Appended piece by piece: GCC 12 misreports `": " + std::string` under -Wrestrict (PR 105329).
      std::string text = p.phase;
      if (!p.detail.empty()) text.append(": ").append(p.detail);
      else if (p.total > 0) text.append(" ").append(std::to_string(p.done)).append("/").append(std::to_string(p.total));
      int percent = p.total > 0 ? 100 * p.done / p.total : 0;
      progress.report(text, percent, {{"phase", p.phase}, {"done", p.done}, {"total", p.total}, {"elapsedSeconds", p.elapsed_s}, {"detail", p.detail}});
    });
    char done[160];
    if (result.best >= 0)
      std::snprintf(done, sizeof done, "best %.3f ms, %.2fx the eager baseline%s", result.best_ms, result.speedup,
                    result.provisional ? " (noisy: stored as provisional)" : result.measured.noisy ? " (noisy: not stored)" : "");
    else std::snprintf(done, sizeof done, "no candidate passed");
    progress.end(done);
    session->remember_tune(program, {request.bindings, tune::target_name(request.target)});
    refresh_lenses();
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

namespace {
// What kernel/source and kernel/library are asked about. Without bindings: this client's last
// tune of the program (its target too, unless one is named), else the latest tune of any client;
// `basis` says which.
struct KernelQuestion {
  std::string program;
  int candidate = 0;
  std::map<std::string, int64_t> bindings;
  backend::Target target{};
  std::string basis;
};

KernelQuestion kernel_question(const Session& session, const json& params) {
  KernelQuestion q;
  q.program = require_string(params, "program");
  auto candidate = optional_int(params, "candidate").value_or(0);
  if (candidate < 0) throw invalid_params("candidate", "'candidate' must be a candidate id (1, 2, …)");
  q.candidate = static_cast<int>(candidate);
  q.bindings = parse_bindings(params);
  q.target = parse_target_param(params);
  q.basis = q.bindings.empty() ? "latest tune" : "bindings";
  if (std::optional<Session::LastTune> last = session.last_tune(q.program); q.bindings.empty() && last) {
    const std::optional<backend::Target> last_target = tune::parse_target(last->target);
    if (!params.contains("target") || last_target == q.target) {
      q.bindings = last->bindings;
      if (last_target) q.target = *last_target;
      q.basis = "your tune";
    }
  }
  return q;
}
}  // namespace

void Server::kernel_source(const SessionPtr& session, const Incoming& message) {
  const json& params = params_object(message.params);
  const KernelQuestion q = kernel_question(*session, params);
  const bool for_export = optional_bool(params, "export").value_or(false);
  const std::optional<pipeline::Pass> dump_after = parse_dump_param(params, pipeline::Stage::Kernel);
  // It may search and describe the CPU first: off the I/O thread.
  long_request(session, message, {q.program}, [this, q, for_export, dump_after](const CancelToken&) {
    std::optional<pipeline::Dump> dump;
    if (dump_after) dump.emplace(*dump_after);
    json out = kernel_source_json(workspace_.kernel_source(q.program, q.candidate, q.bindings, q.target, nullptr, dump ? &*dump : nullptr),
                                  for_export);
    out["basis"] = q.basis;
    if (dump) out["dump"] = dump_json(*dump);
    return out;
  });
}

void Server::kernel_library(const SessionPtr& session, const Incoming& message) {
  const json& params = params_object(message.params);
  const KernelQuestion q = kernel_question(*session, params);
  const bool eager = optional_bool(params, "eager").value_or(false);
  if (eager && q.candidate != 0) throw invalid_params("eager", "'eager' asks for the eager plan: give no 'candidate' with it");
  // It may search, describe the CPU and compile: off the I/O thread.
  long_request(session, message, {q.program}, [this, q, eager](const CancelToken&) {
    json out = kernel_library_json(eager ? workspace_.eager_library(q.program, q.bindings, q.target)
                                         : workspace_.kernel_library(q.program, q.candidate, q.bindings, q.target));
    out["basis"] = q.basis;
    return out;
  });
}

}  // namespace prism::protocol
