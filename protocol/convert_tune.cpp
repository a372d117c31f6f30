// tune/run params and the JSON of tuning results, kernel sources and targets (docs/protocol.md).
#include "engine/tune/backends.h"
#include "protocol/convert.h"
#include "protocol/params.h"

namespace prism::protocol {

namespace {

json sizes_json(const std::map<std::string, int64_t>& sizes) {
  json out = json::object();
  for (const auto& [k, v] : sizes) out[k] = v;
  return out;
}

json row_json(const tune::TuneRow& row) {
  json out{{"candidate", row.candidate},  {"summary", row.summary},         {"sizes", sizes_json(row.sizes)},
           {"costRank", row.cost_rank},   {"predictedMs", row.predicted_ms}, {"ok", row.ok}};
  if (!row.schedule.empty()) out["schedule"] = sizes_json(row.schedule);
  if (row.ok) {
    out["measuredMs"] = row.measured_ms;
    out["spread"] = row.spread;
    out["noisy"] = row.noisy;
    out["maxError"] = row.max_error;
    out["vsEager"] = row.speedup;
    out["rooflineFraction"] = row.roofline_fraction;
  } else {
    out["error"] = row.error;
  }
  return out;
}

json measured_json(const tune::Measured& m) {
  return {{"at", m.at},
          {"rounds", m.rounds},
          {"attempts", m.attempts},
          {"foreignCores", m.foreign_cores},
          {"steal", m.steal},
          {"baselineSpread", m.baseline_spread},
          {"ratioSpread", m.ratio_spread},
          {"contention", m.contention},
          {"remeasured", m.remeasured},
          {"confirmed", m.confirmed},
          {"noisy", m.noisy},
          {"queued", m.queued},
          {"tunerRevision", m.tuner_revision},
          {"seed", m.seed},
          {"search", m.search}};
}

}  // namespace

backend::Target parse_target_param(const json& params) {
  const std::string name = optional_string(params, "target").value_or("cpu");
  if (std::optional<backend::Target> target = tune::parse_target(name)) return *target;
  throw invalid_params("target", "unknown target '" + name + "' (targets: " + tune::target_names() + ")");
}

tune::TuneRequest parse_tune_request(const json& params) {
  tune::TuneRequest request;
  // A program with no symbolic dims is tuned at {}; the workspace checks them against the program.
  if (!params.contains("bindings")) throw invalid_params("bindings", "missing 'bindings': every dim of the program, e.g. {\"n\": 8}");
  request.bindings = parse_bindings(params);
  request.target = parse_target_param(params);
  if (auto top = optional_int(params, "top")) {
    if (*top < 1 || *top > 256) throw invalid_params("top", "'top' must be between 1 and 256");
    request.top = static_cast<int>(*top);
  }
  if (auto threads = optional_int(params, "threads")) {
    if (*threads < 1 || *threads > 1024) throw invalid_params("threads", "'threads' must be between 1 and 1024");
    request.threads = static_cast<int>(*threads);
  }
  if (auto seed = optional_int(params, "seed")) {
    if (*seed < 0) throw invalid_params("seed", "'seed' must not be negative");
    request.seed = static_cast<uint64_t>(*seed);
  }
  request.fresh = optional_bool(params, "fresh").value_or(false);
  if (const json* data = optional_object(params, "checkWith"))
    for (const auto& [input, path] : data->items()) request.check_with_files[input] = file_param(path, "checkWith." + input);
  return request;
}

json tune_result_json(const tune::TuneResult& r) {
  const backend::Backend::Presentation shown = tune::backend_for(r.target).presentation();
  json rows = json::array();
  for (const auto& row : r.rows) rows.push_back(row_json(row));
  json out{{"program", r.program},
           {"version", r.version},
           {"target", tune::target_name(r.target)},
           {"targetMachine", shown.machine},
           {"threadsMeaning", shown.threads},
           {"targetModel", r.target_model},
           {"bindings", sizes_json(r.bindings)},
           {"top", r.top},
           {"threads", r.threads},
           {"bandwidthGBs", r.bandwidth_gbs},
           {"peakGflops", r.peak_gflops},
           {"baselineMs", r.baseline_ms},
           {"bestMs", r.best_ms},
           {"speedup", r.speedup},
           {"rooflineMs", r.roofline_ms},
           {"rooflineFraction", r.roofline_fraction},
           {"rooflineBound", r.roofline_bound},
           {"rankCorrelation", r.rank_correlation},
           {"regret", tune::regret(r)},
           {"fromDb", r.from_db},
           {"noisy", r.measured.noisy},
           {"provisional", r.provisional},
           {"measured", measured_json(r.measured)},
           {"rows", std::move(rows)},
           {"stats",
            {{"instantiations", r.stats.instantiations},
             {"compiled", r.stats.compiled},
             {"cached", r.stats.cached},
             {"compileSeconds", r.stats.compile_s},
             {"runSeconds", r.stats.run_s},
             {"totalSeconds", r.stats.total_s}}}};
  if (r.roofline_drawn_ms > 0) out["rooflineDrawnMs"] = r.roofline_drawn_ms;
  if (!r.baseline_error.empty()) out["baselineError"] = r.baseline_error;
  if (!r.baseline_note.empty()) out["baselineNote"] = r.baseline_note;
  out["inputRange"] = r.input_range;
  if (!r.input_note.empty()) out["inputNote"] = r.input_note;
  out["edgeSets"] = r.edge_sets;
  out["edgeNotes"] = r.edge_notes;
  out["best"] = r.best >= 0 ? row_json(r.rows[size_t(r.best)]) : json(nullptr);
  return out;
}

namespace {
// Which kernel a kernel/source or kernel/library answer is about.
json kernel_json(const tune::KernelSource& k) {
  json out{{"program", k.program}, {"candidate", k.candidate}, {"summary", k.summary},
           {"bindings", sizes_json(k.bindings)}, {"sizes", sizes_json(k.sizes)}, {"target", tune::target_name(k.target)},
           {"targetMachine", tune::backend_for(k.target).presentation().machine}, {"tuned", k.tuned}, {"symbol", k.symbol}};
  if (!k.schedule.empty()) out["schedule"] = sizes_json(k.schedule);
  return out;
}
}  // namespace

json kernel_source_json(const tune::KernelSource& k, bool for_export) {
  json out = kernel_json(k);
  out["source"] = for_export ? k.export_source : k.source;
  out["header"] = k.header;
  return out;
}

json kernel_library_json(const tune::KernelLibrary& l) {
  json out = kernel_json(l.kernel);
  out["library"] = l.path;
  out["eager"] = l.eager;
  const backend::Backend::Presentation shown = tune::backend_for(l.kernel.target).presentation();
  out["runtime"] = shown.runtime;
  out["device"] = shown.device;
  return out;
}

json target_status_json(const std::vector<tune::TargetStatus>& targets) {
  json out = json::array();
  for (const auto& t : targets) {
    const backend::Backend::Presentation shown = tune::backend_for(t.target).presentation();
    out.push_back({{"name", tune::target_name(t.target)}, {"available", t.available}, {"detail", t.detail}, {"machine", shown.machine},
                   {"device", shown.device}, {"runtime", shown.runtime}});
  }
  return out;
}

}  // namespace prism::protocol
