// `batch MANIFEST`: a model's tunes as one command (docs/tuning.md, "Batches").
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "repl/commands.h"
#include "repl/format.h"
#include "repl/session.h"
#include "repl/tune_report.h"

namespace prism::repl {

namespace {

// The manifest's jobs, each a tune/run's params: every program × its bindings × its targets.
// `open` lists the files to open first (absolute, each once).
json manifest_jobs(const json& manifest, const std::filesystem::path& dir, bool fresh, std::vector<std::string>& open) {
  auto fail = [](const std::string& what) -> CommandError { return CommandError("the manifest " + what); };
  if (!manifest.is_object() || !manifest.contains("programs") || !manifest["programs"].is_array())
    throw fail("needs \"programs\": [{\"program\": NAME, \"file\": PATH, \"bindings\": [{DIM: VALUE, …}, …]}, …]");
  json jobs = json::array();
  for (size_t i = 0; i < manifest["programs"].size(); ++i) {
    const json& p = manifest["programs"][i];
    const std::string where = "programs[" + std::to_string(i) + "]";
    if (!p.is_object() || !p.contains("program") || !p["program"].is_string()) throw fail(where + " needs \"program\": its name");
    if (p.contains("file")) {
      if (!p["file"].is_string()) throw fail(where + ".file must be a path");
      const std::string file = (dir / p["file"].get<std::string>()).lexically_normal().string();
      if (std::find(open.begin(), open.end(), file) == open.end()) open.push_back(file);
    }
    const json bindings = p.value("bindings", json::array());
    if (!bindings.is_array() || bindings.empty()) throw fail(where + " needs \"bindings\": a list of {DIM: VALUE} objects");
    const json targets = p.value("targets", manifest.value("targets", json::array({"cpu"})));
    if (!targets.is_array() || targets.empty()) throw fail(where + ".targets must be a list such as [\"cpu\", \"cuda\"]");
    const json top = p.value("top", manifest.value("top", json()));
    for (const json& target : targets)
      for (const json& b : bindings) {
        if (!b.is_object()) throw fail(where + ".bindings must hold {DIM: VALUE} objects");
        json job{{"program", p["program"]}, {"bindings", b}, {"target", target}};
        if (!top.is_null()) job["top"] = top;
        if (fresh) job["fresh"] = true;
        jobs.push_back(std::move(job));
      }
  }
  return jobs;
}

std::string batch_report(const json& r) {
  Table t({"PROGRAM", "DIMS", "TARGET", "STATUS", "EAGER", "BEST", "SPEEDUP", "NOTE"});
  for (const json& job : r.value("jobs", json::array())) {
    const json res = job.value("result", json::object());
    const bool ok = job.value("status", "") != "failed";
    char speedup[32] = "-";
    if (ok && res.value("bestMs", 0.0) > 0) std::snprintf(speedup, sizeof speedup, "%.2fx", res.value("speedup", 0.0));
    const std::string status = job.value("status", "");
    t.add({job.value("program", ""), sizes_of(job.value("bindings", json::object())), job.value("target", ""), status == "stored" ? "from DB" : status,
           ok ? duration_text(res.value("baselineMs", 0.0)) : "-", ok && res.value("bestMs", 0.0) > 0 ? duration_text(res.value("bestMs", 0.0)) : "-",
           speedup, ok ? (res.value("best", json()).is_null() ? "no candidate passed" : "") : job.value("error", "")});
  }
  const size_t jobs = r.value("jobs", json::array()).size();
  const int failed = r.value("failed", 0), stored = r.value("stored", 0);
  return t.render() + std::to_string(jobs) + " jobs: " + std::to_string(int(jobs) - failed - stored) + " tuned, " + std::to_string(stored) +
         " answered by the tuning DB, " + std::to_string(failed) + " failed\n";
}

}  // namespace

CommandOutput Session::batch(const std::vector<std::string>& args) {
  std::vector<std::string> positional;
  bool fresh = false;
  for (const std::string& a : args)
    if (a == "--fresh") fresh = true;
    else if (a.rfind("--", 0) == 0) throw CommandError(usage_error("batch", "unknown option " + a)).at(a);
    else positional.push_back(a);
  if (positional.size() != 1) throw CommandError(usage_error("batch", "batch takes one manifest file"));
  const std::filesystem::path path = absolute_path(positional[0]);
  std::ifstream in(path);
  if (!in) throw CommandError("cannot read " + positional[0]);
  json manifest = json::parse(in, nullptr, false);
  if (manifest.is_discarded()) throw CommandError(positional[0] + " is not JSON (docs/tuning.md, \"Batches\", shows a manifest)");
  std::vector<std::string> files;
  json params{{"jobs", manifest_jobs(manifest, path.parent_path(), fresh, files)}};
  for (const std::string& file : files) open({file});
  json r = call_with_progress("batch/run", params, "batch");
  CommandOutput out{r, batch_report(r)};
  if (const int failed = r.value("failed", 0); failed > 0) out.failure = std::to_string(failed) + " of the batch's jobs failed";
  return out;
}

}  // namespace prism::repl
