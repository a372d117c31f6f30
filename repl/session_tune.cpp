// The REPL's tuning commands: tune (a speedup table), code (a kernel's source) and export
// (the source and a C header written to files).
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/util/private_files.h"
#include "repl/commands.h"
#include "repl/format.h"
#include "repl/pass_dump.h"
#include "repl/session.h"
#include "repl/tune_report.h"

namespace prism::repl {

namespace {

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
        if (p.target_given) throw CommandError(usage_error(command, "--target given twice")).at(a);
        p.target = v;
        p.target_given = true;
        continue;
      }
      if (std::find(number_flags.begin(), number_flags.end(), a) == number_flags.end())
        throw CommandError(usage_error(command, "unexpected argument '" + a + "'")).at(a);
      int64_t n = 0;
      if (!parse_int(v, n) || n < 1) throw CommandError(usage_error(command, a + " wants a positive integer, not '" + v + "'")).at(a + " " + v);
      if (!p.numbers.emplace(a, n).second) throw CommandError(usage_error(command, a + " given twice")).at(a);
    } else if (size_t eq = a.find('='); eq != std::string::npos) {
      int64_t n = 0;
      std::string dim = a.substr(0, eq), v = a.substr(eq + 1);
      if (dim.empty() || !parse_int(v, n) || n <= 0)
        throw CommandError(usage_error(command, "binding '" + a + "' wants DIM=POSITIVE_INTEGER")).at(a);
      if (!p.bindings.emplace(dim, n).second) throw CommandError(usage_error(command, dim + " given twice")).at(a);
    } else {
      p.positional.push_back(a);
    }
  }
  return p;
}

// Takes every `--check-with INPUT=PATH` out of `args`: {INPUT: absolute path}.
json take_check_with(std::vector<std::string>& args) {
  json data = json::object();
  for (size_t i = 0; i < args.size();) {
    if (args[i] != "--check-with") {
      ++i;
      continue;
    }
    if (i + 1 >= args.size()) throw CommandError(usage_error("tune", "--check-with needs INPUT=PATH")).at(args[i]);
    const std::string v = args[i + 1];
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
      throw CommandError(usage_error("tune", "--check-with wants INPUT=PATH, not '" + v + "'")).at(v);
    if (data.contains(v.substr(0, eq))) throw CommandError(usage_error("tune", "--check-with " + v.substr(0, eq) + " given twice")).at(v);
    data[v.substr(0, eq)] = absolute_path(v.substr(eq + 1));
    args.erase(args.begin() + long(i), args.begin() + long(i) + 2);
  }
  return data;
}

// The largest DB file `db import` reads: what one request to the daemon may carry, less its framing.
constexpr size_t kMaxImportBytes = size_t(48) << 20;

// How the answer's backend names its machine ("the CPU"), or its target's name.
std::string target_words(const json& r) { return r.value("targetMachine", r.value("target", "")); }

}  // namespace

CommandOutput Session::tune(const std::vector<std::string>& given) {
  std::vector<std::string> args = given;
  const json check_with = take_check_with(args);
  Parsed p = parse_args("tune", args, {"--top", "--threads", "--seed"}, {"--fresh"});
  if (p.positional.size() != 1) throw CommandError(usage_error("tune", p.positional.empty() ? "tune needs a program name" : "tune takes one program name"));
  const std::string program = p.positional[0];
  json params = {{"program", program}, {"bindings", p.bindings}, {"target", p.target}};
  if (p.numbers.count("--top")) params["top"] = p.numbers["--top"];
  if (p.numbers.count("--threads")) params["threads"] = p.numbers["--threads"];
  if (p.numbers.count("--seed")) params["seed"] = p.numbers["--seed"];
  if (p.switches.count("--fresh")) params["fresh"] = true;
  if (!check_with.empty()) params["checkWith"] = check_with;
  json r = call_with_progress("tune/run", params, "tune");

  // --json: the protocol's result whole (docs/protocol.md, tune/run). A tune with no best printed
  // its table, yet failed: a script stops there (exit 1).
  CommandOutput out{r, tune_report(r, program)};
  if (r.value("best", json()).is_null())
    out.failure = "no kernel of '" + program + "' passed its check at " + sizes_of(r.value("bindings", json::object())) +
                  " on " + target_words(r);
  return out;
}

namespace {

// What a kernel/source answer is about: "rms_linear candidate 4 at d=1024 n=8 (your last tune),
// sizes F1=8 g1=1 (tuned)".
std::string kernel_identity(const json& r) {
  const std::string basis = r.value("basis", "");
  const std::string why = basis == "your tune" ? " (your last tune)" : basis == "latest tune" ? " (the latest tune, by any client)" : "";
  return r.value("program", "") + " candidate " + std::to_string(r.value("candidate", 0)) + " at " + sizes_of(r.value("bindings", json::object())) +
         why + " on " + target_words(r) + ", sizes " + sizes_and_schedule(r) +
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

CommandOutput Session::code(const std::vector<std::string>& given) {
  std::vector<std::string> args = given;
  const std::string dump_after = take_dump_after("code", args);
  Parsed p = parse_args("code", args, {});
  if (p.positional.empty() || p.positional.size() > 2) throw CommandError(usage_error("code", "code takes a program name and optionally a candidate"));
  json params = source_params("code", p, 1);
  if (!dump_after.empty()) params["dumpAfter"] = dump_after;
  json r = call("kernel/source", params);
  std::string text = dump_text(r) + "// " + kernel_identity(r) + "\n" + r.value("source", "");
  if (!text.empty() && text.back() != '\n') text += "\n";
  CommandOutput out{r, text};
  out.verbatim = true;
  return out;
}

CommandOutput Session::export_kernel(const std::vector<std::string>& args) {
  Parsed p = parse_args("export", args, {});
  if (p.positional.size() < 2 || p.positional.size() > 3)
    throw CommandError(usage_error("export", "export takes a program name, a file and optionally a candidate"));
  std::filesystem::path file = absolute_path(p.positional[1]);
  Parsed source_args = p;
  source_args.positional.erase(source_args.positional.begin() + 1);  // NAME [K]
  json params = source_params("export", source_args, 1);
  params["export"] = true;
  json r = call("kernel/source", params);
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

CommandOutput Session::tuning_db(const std::vector<std::string>& args) {
  if (args.size() != 2 || (args[0] != "export" && args[0] != "import"))
    throw CommandError(usage_error("db", "db wants `export FILE` or `import FILE`"));
  const std::string file = absolute_path(args[1]);
  if (args[0] == "export") {
    json r = call("tuningDb/export", json::object());
    if (std::string problem = write_file_atomically(file, r.value("text", ""), 0666); !problem.empty()) throw CommandError(problem);
    const int entries = r.value("entries", 0);
    return {json{{"entries", entries}, {"file", file}}, "wrote " + std::to_string(entries) + " tuning results to " + file + "\n"};
  }
  // Only a regular file, whole and within what one message may carry: a FIFO, a device or a
  // directory is refused without reading it (docs/protocol.md, "Security").
  const FileContents text = read_regular_file(file, kMaxImportBytes);
  if (!text.bytes) throw CommandError("db import: " + text.error).at(args[1]);
  json r = call("tuningDb/import", {{"text", *text.bytes}});
  std::string out = "imported " + file + ": " + std::to_string(r.value("added", 0)) + " added, " + std::to_string(r.value("present", 0)) +
                    " already measured here";
  if (const int merged = r.value("merged", 0); merged > 0) out += ", " + std::to_string(merged) + " joined to another import's claim";
  if (const int rejected = r.value("rejected", 0); rejected > 0) out += ", " + std::to_string(rejected) + " rejected (damaged, not prism's, or impossible here)";
  out += "\n";
  for (const auto& problem : r.value("problems", std::vector<std::string>{})) out += "  rejected: " + problem + "\n";
  // Another machine's figures: a tune here measures them before it serves them.
  if (r.value("added", 0) + r.value("merged", 0) > 0) out += "imported results are measured here by the first tune that asks for them\n";
  return {r, out};
}

}  // namespace prism::repl
