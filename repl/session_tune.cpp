// The REPL's tuning commands: tune (a speedup table), code (a kernel's source) and export
// (the source and a C header written to files).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/util/private_files.h"
#include "repl/commands.h"
#include "repl/format.h"
#include "repl/session.h"

namespace prism::repl {

namespace {

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.3f ms" : "%.1f ms", v);
  return buf;
}

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

std::string sizes_of(const json& sizes) {
  std::string s;
  for (auto it = sizes.begin(); it != sizes.end(); ++it) s += (s.empty() ? "" : " ") + it.key() + "=" + it.value().dump();
  return s.empty() ? "-" : s;
}

// ", from the tuning DB (measured 2026-11-24 11:50 UTC)" when the answer came from the DB.
std::string from_db_text(const json& r) {
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
std::string timing_text(const json& m, const std::string& program, const json& bindings) {
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
    out << "NOISY: " << why << ". These times are not stored in the tuning DB; tune again on a quieter machine (`tune " << program << " "
        << sizes_of(bindings) << " --fresh`).\n";
  else if (!why.empty())
    out << "note: " << why << " during the last attempt; the interleaved rounds agree, so the ratios stand.\n";
  return out.str();
}

// Shared by tune, code and export: DIM=VALUE bindings, --target T, and the flags each allows.
struct Parsed {
  json bindings = json::object();
  std::string target = "cpu";
  bool target_given = false;                 // --target named
  std::map<std::string, int64_t> numbers;    // --top 8 …
  std::set<std::string> switches;            // --fresh …
  std::vector<std::string> positional;       // what is left, in order
};

Parsed parse_args(const std::string& command, const std::vector<std::string>& args, const std::vector<std::string>& number_flags,
                  const std::vector<std::string>& switch_flags = {}) {
  Parsed p;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (std::find(switch_flags.begin(), switch_flags.end(), a) != switch_flags.end()) {
      p.switches.insert(a);
      continue;
    }
    if (a.rfind("--", 0) == 0) {
      if (i + 1 >= args.size()) throw CommandError(usage_error(command, a + " needs a value")).at(a);
      const std::string& v = args[++i];
      if (a == "--target") {
        p.target = v;
        p.target_given = true;
        continue;
      }
      if (std::find(number_flags.begin(), number_flags.end(), a) == number_flags.end())
        throw CommandError(usage_error(command, "unexpected argument '" + a + "'")).at(a);
      int64_t n = 0;
      if (!parse_int(v, n) || n < 1) throw CommandError(usage_error(command, a + " wants a positive integer, not '" + v + "'")).at(a + " " + v);
      p.numbers[a] = n;
    } else if (size_t eq = a.find('='); eq != std::string::npos) {
      int64_t n = 0;
      std::string dim = a.substr(0, eq), v = a.substr(eq + 1);
      if (dim.empty() || !parse_int(v, n) || n <= 0)
        throw CommandError(usage_error(command, "binding '" + a + "' wants DIM=POSITIVE_INTEGER")).at(a);
      p.bindings[dim] = n;
    } else {
      p.positional.push_back(a);
    }
  }
  return p;
}

}  // namespace

CommandOutput Session::tune(const std::vector<std::string>& args) {
  Parsed p = parse_args("tune", args, {"--top", "--threads", "--seed"}, {"--fresh"});
  if (p.positional.size() != 1) throw CommandError(usage_error("tune", p.positional.empty() ? "tune needs a program name" : "tune takes one program name"));
  if (p.bindings.empty()) throw CommandError(usage_error("tune", "tune needs the dims: e.g. n=8 d=4096"));
  const std::string program = p.positional[0];
  json params = {{"program", program}, {"bindings", p.bindings}, {"target", p.target}};
  if (p.numbers.count("--top")) params["top"] = p.numbers["--top"];
  if (p.numbers.count("--threads")) params["threads"] = p.numbers["--threads"];
  if (p.numbers.count("--seed")) params["seed"] = p.numbers["--seed"];
  if (p.switches.count("--fresh")) params["fresh"] = true;
  if (progress_sink_) params["workDoneToken"] = "prism-tune-" + std::to_string(++progress_tokens_);
  json r;
  try {
    r = call("tune/run", params);
  } catch (...) {
    if (progress_sink_) progress_sink_(json{{"kind", "end"}});
    throw;
  }
  if (progress_sink_) progress_sink_(json{{"kind", "end"}});

  const json best = r.value("best", json());
  const json rows = r.value("rows", json::array());
  const json stats = r.value("stats", json::object());
  std::ostringstream out;
  out << program << " " << sizes_of(r.value("bindings", json::object())) << " on " << r.value("target", "") << " ("
      << r.value("targetModel", "") << "; " << number(std::round(r.value("bandwidthGBs", 0.0) * 10) / 10) << " GB/s, "
      << number(std::round(r.value("peakGflops", 0.0))) << " GFLOP/s), " << r.value("threads", 0)
      << (r.value("target", "") == "cuda" ? " threads per block" : " threads")
      << from_db_text(r) << "\n";
  Table summary({"EAGER", "BEST", "SPEEDUP", "ROOFLINE", "CANDIDATE", "SIZES", "SUMMARY"});
  if (best.is_object()) {
    summary.add({ms(r.value("baselineMs", 0.0)), ms(r.value("bestMs", 0.0)), ratio(r.value("speedup", 0.0)),
                 percent(r.value("rooflineFraction", 0.0)), std::to_string(best.value("candidate", 0)),
                 sizes_of(best.value("sizes", json::object())), best.value("summary", "")});
  } else {
    // Nothing to time is not the same as nothing right: say which.
    const bool none_fit = stats.value("instantiations", int64_t{0}) == 0;
    summary.add({ms(r.value("baselineMs", 0.0)), "-", "-", "-", "-", "-",
                 none_fit ? "no family instantiates at these dims within the target's fast memory per block"
                          : "no candidate passed its check"});
  }
  out << summary.render();
  if (r.contains("baselineError")) out << "the eager baseline failed: " << r.value("baselineError", "") << "\n";
  if (r.contains("baselineNote")) out << "eager baseline: " << r.value("baselineNote", "") << "\n";
  if (r.contains("inputNote")) out << "note: " << r.value("inputNote", "") << "\n";
  std::string bound = r.value("rooflineBound", "");
  out << "roofline " << ms(r.value("rooflineMs", 0.0)) << " ("
      << (bound == "cache" ? "memory-bound; the working set stays in the caches" : bound + "-bound") << ")\n\n";
  Table timed({"CANDIDATE", "SIZES", "COST RANK", "PREDICTED", "MEASURED", "SPREAD", "VS EAGER", "ROOFLINE", "CHECK"});
  const double roof = r.value("rooflineMs", 0.0);
  for (const auto& row : rows) {
    bool ok = row.value("ok", false);
    double measured = row.value("measuredMs", 0.0), base = r.value("baselineMs", 0.0);
    timed.add({std::to_string(row.value("candidate", 0)), sizes_of(row.value("sizes", json::object())),
               std::to_string(row.value("costRank", 0)), ms(row.value("predictedMs", 0.0)), ok ? ms(measured) : "-",
               ok ? spread_text(row) : "-", ok && base > 0 ? ratio(base / measured) : "-", ok && measured > 0 ? percent(roof / measured) : "-",
               ok ? "ok" : row.value("error", "failed")});
  }
  out << timed.render();
  out << timing_text(r.value("measured", json::object()), program, r.value("bindings", json::object()));
  char tail[320], model[128] = "";
  // The regret is undefined (0) when no row passed.
  if (r.value("regret", 0.0) > 0)
    std::snprintf(model, sizeof model, "; the cost model's first choice ran %.2fx the best's time (rank correlation %.2f)",
                  r.value("regret", 0.0), r.value("rankCorrelation", 0.0));
  std::snprintf(tail, sizeof tail, "%zu of %lld instantiations timed (%lld compiled, %lld cached), %.1f s%s\n", rows.size(),
                static_cast<long long>(stats.value("instantiations", int64_t{0})), static_cast<long long>(stats.value("compiled", int64_t{0})),
                static_cast<long long>(stats.value("cached", int64_t{0})), stats.value("totalSeconds", 0.0), model);
  out << tail << "`code " << program << "` prints the best kernel; `export " << program << " FILE` writes it.\n";

  // --json: the protocol's result whole (docs/protocol.md, tune/run).
  json data = r;
  return {data, out.str()};
}

namespace {
// What a kernel/source answer is about: "rms_linear candidate 4 at d=1024 n=8 (your last tune),
// sizes F1=8 g1=1 (tuned)".
std::string kernel_identity(const json& r) {
  const std::string basis = r.value("basis", "");
  const std::string why = basis == "your tune" ? " (your last tune)" : basis == "latest tune" ? " (the latest tune, by any client)" : "";
  return r.value("program", "") + " candidate " + std::to_string(r.value("candidate", 0)) + " at " + sizes_of(r.value("bindings", json::object())) +
         why + " on the " + r.value("target", "cpu") + ", sizes " + sizes_of(r.value("sizes", json::object())) +
         (r.value("tuned", false) ? " (tuned)" : " (chosen by the cost model)");
}

// kernel/source params for NAME [K] and the bindings and target given.
json source_params(const std::string& command, const Parsed& p, size_t candidate_at) {
  // No --target and no dims: the daemon answers about this client's last tune, on its target.
  json params = {{"program", p.positional[0]}, {"bindings", p.bindings}};
  if (p.target_given || !p.bindings.empty()) params["target"] = p.target;
  if (p.positional.size() > candidate_at) {
    int64_t k = 0;
    if (!parse_int(p.positional[candidate_at], k) || k < 1)
      throw CommandError(usage_error(command, "a candidate is a number from `candidates " + p.positional[0] + "`, not '" + p.positional[candidate_at] + "'"));
    params["candidate"] = k;
  }
  return params;
}
}  // namespace

CommandOutput Session::code(const std::vector<std::string>& args) {
  Parsed p = parse_args("code", args, {});
  if (p.positional.empty() || p.positional.size() > 2) throw CommandError(usage_error("code", "code takes a program name and optionally a candidate"));
  json r = call("kernel/source", source_params("code", p, 1));
  std::string text = "// " + kernel_identity(r) + "\n" + r.value("source", "");
  if (!text.empty() && text.back() != '\n') text += "\n";
  return {r, text};
}

CommandOutput Session::export_kernel(const std::vector<std::string>& args) {
  Parsed p = parse_args("export", args, {});
  if (p.positional.size() < 2 || p.positional.size() > 3)
    throw CommandError(usage_error("export", "export takes a program name, a file and optionally a candidate"));
  std::filesystem::path file = absolute_path(p.positional[1]);
  Parsed source_args = p;
  source_args.positional.erase(source_args.positional.begin() + 1);  // NAME [K]
  json r = call("kernel/source", source_params("export", source_args, 1));
  std::filesystem::path header = file;
  header.replace_extension(".h");
  if (header == file) header += ".h";
  std::string source = "#include \"" + header.filename().string() + "\"\n" + r.value("source", "");
  // Each written whole to a new file renamed into place: a symlink at the path is replaced, not followed.
  for (const auto& [path, text] : {std::pair{file, source}, std::pair{header, r.value("header", "")}})
    if (std::string problem = write_file_atomically(path.string(), text, 0666); !problem.empty()) throw CommandError(problem);
  json data = r;
  data.erase("source");
  data.erase("header");
  data["sourceFile"] = file.string();
  data["headerFile"] = header.string();
  return {data, "wrote " + file.string() + " and " + header.string() + ": " + kernel_identity(r) + "\n"};
}

}  // namespace prism::repl
