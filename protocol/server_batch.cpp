// batch/run: a model's tunes as one request (docs/tuning.md, "Batches"; docs/protocol.md).
#include "engine/tune/backends.h"
#include "protocol/convert.h"
#include "protocol/params.h"
#include "protocol/progress.h"
#include "protocol/server.h"

namespace prism::protocol {

void Server::batch(const SessionPtr& session, const Incoming& message) {
  const json& params = params_object(message.params);
  std::vector<Workspace::BatchJob> jobs;
  std::vector<std::string> programs;
  const json& list = require_array(params, "jobs");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "jobs[" + std::to_string(i) + "]";
    if (!list[i].is_object()) throw invalid_params(where, "'" + where + "' must be an object: {program, bindings, target?, top?}");
    Workspace::BatchJob job{require_string(list[i], "program", where + "."), parse_tune_request(list[i])};
    programs.push_back(job.program);
    jobs.push_back(std::move(job));
  }
  const json token = work_done_token(params);
  if (!token.is_null() && message.id) session->bind_progress(token, *message.id);
  long_request(session, message, programs, [this, session, jobs, token](const CancelToken& cancel) {
    WorkDoneProgress progress(session, token);
    progress.begin("batch of " + std::to_string(jobs.size()) + " tunes", "starting");
    auto outcomes = workspace_.tune_batch(jobs, &cancel, [&](const Workspace::BatchProgress& p) {
      std::string text = std::to_string(p.done) + " done, " + std::to_string(p.failed) + " failed, " + std::to_string(p.left) + " left";
      if (!p.job.empty()) text.append(": ").append(p.job);
      const int total = p.done + p.failed + p.left;
      progress.report(text, total > 0 ? 100 * (p.done + p.failed) / total : 100, {{"done", p.done}, {"failed", p.failed}, {"left", p.left}});
    });
    json out = json::array();
    int failed = 0, stored = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const Workspace::BatchOutcome& o = outcomes[i];
      json job{{"program", jobs[i].program}, {"bindings", jobs[i].request.bindings}, {"target", tune::target_name(jobs[i].request.target)}};
      if (o.ok) {
        job["status"] = o.result.from_db ? "stored" : "tuned";
        job["result"] = tune_result_json(o.result);
        stored += o.result.from_db;
      } else {
        job["status"] = "failed";
        job["error"] = o.error;
        ++failed;
      }
      out.push_back(std::move(job));
    }
    progress.end(std::to_string(jobs.size() - size_t(failed)) + " done, " + std::to_string(failed) + " failed");
    return json{{"jobs", std::move(out)}, {"failed", failed}, {"stored", stored}};
  });
}

}  // namespace prism::protocol
