// The text of a tune/run result: see tune_report.h.
#include "repl/tune_report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "repl/client.h"
#include "repl/format.h"

namespace prism::repl {

namespace {

std::string ms(double v) { return duration_text(v); }

std::string ratio(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", v);
  return buf;
}

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * v);
  return buf;
}


// ", from the tuning DB (measured 2026-11-24 11:50 UTC)" when the answer came from the DB.
std::string from_db_text(const json& r) {
  // An imported claim is never shown as this machine's: it was measured here first.
  if (const std::string confirmed = r.value("measured", json::object()).value("confirmed", ""); !confirmed.empty())
    return ", the rows of a result imported " + confirmed.substr(0, 10) + " measured here";
  if (!r.value("fromDb", false)) return "";
  std::string at = r.value("measured", json::object()).value("at", "");
  if (at.size() >= 16) at = at.substr(0, 10) + " " + at.substr(11, 5) + " UTC";
  return ", from the tuning DB" + (at.empty() ? std::string() : " (measured " + at + ")");
}

// A row's spread over its rounds, "±3%", marked when above the noise limit.
std::string spread_text(const json& row) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "±%.0f%%%s", 100 * row.value("spread", 0.0), row.value("noisy", false) ? " noisy" : "");
  return buf;
}

// How the rows were timed, and what to do when the machine was too busy to trust them.
std::string timing_text(const json& m, bool provisional, const std::string& program, const json& bindings) {
  std::ostringstream out;
  const int rounds = m.value("rounds", 0), attempts = m.value("attempts", 0);
  if (rounds == 0) return "";
  out << "timed in " << rounds << " interleaved rounds";
  if (attempts > 1) out << ", measured again (" << m.value("remeasured", "the first attempt was contended") << ")";
  char load[96];
  std::snprintf(load, sizeof load, "; other processes used %.1f cores", m.value("foreignCores", 0.0));
  out << load;
  if (m.value("steal", 0.0) >= 0.01) out << ", steal " << percent(m.value("steal", 0.0));
  if (m.value("queued", false)) out << "; waited for another tune on this machine";
  out << "\n";
  const std::string why = m.value("contention", "");
  if (m.value("noisy", false))
    out << "NOISY: " << why << ". "
        << (provisional ? "The tuning DB keeps these times as provisional: they answer while the machine is busy and are measured "
                          "again once it is quiet"
                        : "These times are not stored in the tuning DB: it holds this question's answer from a quiet machine")
        << "; `tune " << program << " " << sizes_of(bindings) << " --fresh` measures again now.\n";
  else if (!why.empty())
    out << "note: " << why << " during the last attempt; the interleaved rounds agree, so the ratios stand.\n";
  return out.str();
}

// Which edge sets every row was checked on (docs/tuning.md, "The edge suite"), and their notes.
std::string edge_text(const json& r) {
  const json sets = r.value("edgeSets", json::array()), notes = r.value("edgeNotes", json::array());
  std::string out;
  if (!sets.empty()) {
    out = "checked on the seeded inputs and " + std::to_string(sets.size()) + " edge set" + (sets.size() == 1 ? "" : "s") + ": ";
    for (size_t i = 0; i < sets.size(); ++i) out += (i ? ", " : "") + sets[i].get<std::string>();
    out += "\n";
  }
  for (const auto& note : notes) out += "note: " + note.get<std::string>() + "\n";
  return out;
}

}  // namespace

std::string sizes_of(const json& sizes) {
  std::string s;
  for (auto it = sizes.begin(); it != sizes.end(); ++it) s += (s.empty() ? "" : " ") + it.key() + "=" + it.value().dump();
  return s.empty() ? "-" : s;
}

std::string sizes_and_schedule(const json& row) {
  const std::string sizes = sizes_of(row.value("sizes", json::object()));
  const json schedule = row.value("schedule", json::object());
  return schedule.empty() ? sizes : (sizes == "-" ? "" : sizes + " ") + sizes_of(schedule);
}

namespace {

// The roofline and, where the best ran faster than the one drawn from the measured peaks, what
// was raised and why (tuner.h, fill_ratios).
std::string roofline_text(const json& r) {
  const std::string bound = r.value("rooflineBound", "");
  const double drawn = r.value("rooflineDrawnMs", 0.0);
  std::ostringstream out;
  out << "roofline " << ms(r.value("rooflineMs", 0.0)) << " ("
      << (bound == "cache" ? "memory-bound; the working set stays in the caches" : bound + "-bound")
      << (drawn > 0 ? "; raised to the best's time" : "") << ")\n";
  if (drawn > 0)
    out << "note: the best ran faster than the " << ms(drawn) << " roofline drawn from the measured peaks ("
        << number(std::round(r.value("bandwidthGBs", 0.0) * 10) / 10) << " GB/s, " << number(std::round(r.value("peakGflops", 0.0)))
        << " GFLOP/s): they are below what this machine reaches\n";
  return out.str();
}

}  // namespace

std::string tune_report(const json& r, const std::string& program, int columns) {
  const json best = r.value("best", json());
  const json rows = r.value("rows", json::array());
  const json stats = r.value("stats", json::object());
  std::ostringstream out;
  out << program << " " << sizes_of(r.value("bindings", json::object())) << " on " << r.value("target", "") << " ("
      << r.value("targetModel", "") << "; " << number(std::round(r.value("bandwidthGBs", 0.0) * 10) / 10) << " GB/s, "
      << number(std::round(r.value("peakGflops", 0.0))) << " GFLOP/s), " << r.value("threads", 0)
      << " " << r.value("threadsMeaning", "threads")
      << from_db_text(r) << "\n";
  Table summary({"EAGER", "BEST", "SPEEDUP", "ROOFLINE", "CANDIDATE", "SIZES", "SUMMARY"});
  // The headline is the best row's own ratios (fill_ratios), so it cannot differ from that row.
  const double speedup = best.is_object() ? best.value("vsEager", r.value("speedup", 0.0)) : 0.0;
  if (best.is_object()) {
    summary.add({ms(r.value("baselineMs", 0.0)), ms(best.value("measuredMs", 0.0)), speedup > 0 ? ratio(speedup) : "-",
                 percent(best.value("rooflineFraction", r.value("rooflineFraction", 0.0))), std::to_string(best.value("candidate", 0)),
                 sizes_and_schedule(best), best.value("summary", "")});
  } else {
    // Nothing to time is not the same as nothing right: say which.
    const bool none_fit = stats.value("instantiations", int64_t{0}) == 0;
    summary.add({ms(r.value("baselineMs", 0.0)), "-", "-", "-", "-", "-",
                 none_fit ? "no family instantiates at these dims within the target's fast memory per block"
                          : "no candidate passed its check"});
  }
  summary.drop_when_narrow({"SIZES", "CANDIDATE"});
  out << summary.render("", columns);
  if (r.contains("baselineError")) out << "the eager baseline failed: " << r.value("baselineError", "") << "\n";
  if (r.contains("baselineNote")) out << "eager baseline: " << r.value("baselineNote", "") << "\n";
  if (r.contains("inputNote")) out << "note: " << r.value("inputNote", "") << "\n";
  out << edge_text(r);
  // Every candidate timed was slower than the eager baseline: say so where the speedup is, so that
  // nobody exports a kernel that loses to the ops run one by one.
  if (speedup > 0 && speedup < 1)
    out << "note: the eager baseline is faster than every candidate timed (the best runs at " << ratio(speedup)
        << " its speed); `code` and `export` still give that candidate\n";
  out << roofline_text(r) << "\n";
  Table timed({"CANDIDATE", "SIZES", "COST RANK", "PREDICTED", "MEASURED", "SPREAD", "VS EAGER", "ROOFLINE", "CHECK"});
  for (const auto& row : rows) {
    const bool ok = row.value("ok", false);
    const double vs = row.value("vsEager", 0.0);
    timed.add({std::to_string(row.value("candidate", 0)), sizes_and_schedule(row),
               std::to_string(row.value("costRank", 0)), ms(row.value("predictedMs", 0.0)), ok ? ms(row.value("measuredMs", 0.0)) : "-",
               ok ? spread_text(row) : "-", ok && vs > 0 ? ratio(vs) : "-", ok ? percent(row.value("rooflineFraction", 0.0)) : "-",
               ok ? "ok" : row.value("error", "failed")});
  }
  timed.drop_when_narrow({"SPREAD", "PREDICTED", "COST RANK", "SIZES"});
  out << timed.render("", columns);
  out << timing_text(r.value("measured", json::object()), r.value("provisional", false), program, r.value("bindings", json::object()));
  char tail[320], model[128] = "";
  // The regret is undefined (0) when no row passed.
  if (r.value("regret", 0.0) > 0)
    std::snprintf(model, sizeof model, "; the cost model's first choice ran %.2fx the best's time (rank correlation %.2f)",
                  r.value("regret", 0.0), r.value("rankCorrelation", 0.0));
  std::snprintf(tail, sizeof tail, "%zu of %lld instantiations timed (%lld compiled, %lld cached), %.1f s%s\n", rows.size(),
                static_cast<long long>(stats.value("instantiations", int64_t{0})), static_cast<long long>(stats.value("compiled", int64_t{0})),
                static_cast<long long>(stats.value("cached", int64_t{0})), stats.value("totalSeconds", 0.0), model);
  out << tail << "`code " << program << "` prints the best kernel; `export " << program << " FILE` writes it.\n";
  return out.str();
}

}  // namespace prism::repl
