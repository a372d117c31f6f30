// Workspace::tune_batch: a model's tunes as one batch on this machine (docs/tuning.md, "Batches").
#include "engine/tune/backends.h"
#include "engine/workspace/workspace.h"

namespace prism {

std::vector<Workspace::BatchOutcome> Workspace::tune_batch(const std::vector<BatchJob>& jobs, const CancelToken* cancel,
                                                           const std::function<void(const BatchProgress&)>& progress) {
  std::vector<BatchOutcome> out;
  BatchProgress at;
  at.left = int(jobs.size());
  for (const BatchJob& job : jobs) {
    if (cancel) cancel->check();
    at.job = job.program + " " + tune::sizes_text(job.request.bindings) + " on " + tune::target_name(job.request.target);
    if (progress) progress(at);
    BatchOutcome o;
    try {
      o.result = tune(job.program, job.request, cancel);
      o.ok = true;
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::Cancelled) throw;
      o.error = e.what();
    }
    --at.left;
    ++(o.ok ? at.done : at.failed);
    out.push_back(std::move(o));
  }
  at.job.clear();
  if (progress) progress(at);
  return out;
}

}  // namespace prism
