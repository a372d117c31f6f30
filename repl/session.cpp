#include "repl/session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/util/private_files.h"
#include "engine/util/text.h"
#include "protocol/framing.h"
#include "repl/commands.h"
#include "repl/format.h"
#include "repl/pass_dump.h"
#include "repl/script.h"

namespace prism::repl {

namespace {

constexpr const char* kTypedScheme = "repl:/";

// A whole-string number greater than zero ("2.5", "30").
bool parse_positive(const std::string& s, double& out) {
  size_t used = 0;
  try {
    out = std::stod(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == s.size() && out > 0;
}

std::string elapsed_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 10 ? "%.2f ms" : "%.1f ms", ms);
  return buf;
}

std::string elapsed_s(double s) { return s < 1 ? elapsed_ms(s * 1000) : (number(std::round(s * 100) / 100) + " s"); }

}  // namespace

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

Session::Session(std::unique_ptr<Client> client, std::function<std::unique_ptr<Client>()> reconnect, std::string token)
    : client_(std::move(client)), reconnect_(std::move(reconnect)), token_(std::move(token)) {
  handshake();
}

void Session::handshake() {
  // Diagnostics also come back in each document result; the pushed copies are not needed here.
  // Progress of a long command goes to the sink that main set (a progress bar), if any.
  client_->on_notification([this](const json& message) { on_notification(message); });
  json params = {{"processId", static_cast<int64_t>(::getpid())},
                 {"clientInfo", {{"name", "prism"}, {"version", PRISM_VERSION}}},
                 {"capabilities", {{"general", {{"positionEncodings", {"utf-8", "utf-16"}}}}}}};
  if (!token_.empty()) params["initializationOptions"] = {{"token", token_}};
  const json init = client_->request("initialize", params, std::chrono::seconds(30));
  const json server = init.is_object() ? init.value("serverInfo", json::object()) : json();
  if (!server.is_object() || !server.value("version", json()).is_string() || !init.value("capabilities", json()).is_object())
    throw ConnectionError("the server did not answer `initialize` as prismd does (" + init.dump().substr(0, 120) +
                          "); is another program listening there?");
  std::string daemon_version = server.value("version", "");
  if (daemon_version != PRISM_VERSION) {
    // Usually a daemon left running from an older build: its answers may not match this REPL.
    warnings_.push_back("prismd " + (daemon_version.empty() ? std::string("of unknown version") : daemon_version) +
                        " is running but this is prism " PRISM_VERSION "; `prism -c \"daemon stop\"` restarts it");
  }
  client_->notify("initialized", json::object());
  warn_if_daemon_rebuilt();
  refresh_program_names();
}

void Session::on_notification(const json& message) {
  const std::string method = message.value("method", "");
  const json params = message.value("params", json::object());
  if (method == "$/progress") {
    if (progress_sink_) progress_sink_(params.value("value", json::object()));
  } else if (method == "program/replaced") {
    const std::string by = params.value("replacedBy", "");
    const std::string uri = params.value("uri", "");
    std::vector<std::string> names;
    for (const auto& p : params.value("programs", json::array())) names.push_back(p.get<std::string>());
    const std::string what = names.empty() ? display_path(uri) : join(names, ", ");
    const std::string source = by.rfind(kTypedScheme, 0) == 0 ? "typed at another prompt" : "from " + display_path(by);
    notes_.push_back(what + " was replaced by another client's definition (" + source + ")");
    names_stale_ = true;
  } else if (method == "program/reloaded") {
    notes_.push_back("reloaded " + display_path(params.value("uri", "")) + ": it changed on disk");
    names_stale_ = true;
  }
}

void Session::poll() {
  try {
    while (auto message = client_->read_message(std::chrono::milliseconds(0)))
      if (message->contains("method") && !message->contains("id")) on_notification(*message);
  } catch (const ConnectionError&) {
    if (!reconnect_) throw;
    const int64_t old_pid = daemon_pid_;
    client_ = reconnect_();
    handshake();
    notes_.push_back("prismd" + (old_pid ? " (pid " + std::to_string(old_pid) + ")" : std::string()) +
                     " went away; connected to prismd (pid " + std::to_string(daemon_pid_) +
                     "), which keeps the programs and tunes on disk");
  }
  if (names_stale_) {
    names_stale_ = false;
    refresh_program_names();
  }
}

std::vector<std::string> Session::take_notes() {
  std::vector<std::string> out;
  out.swap(notes_);
  return out;
}

void Session::warn_if_daemon_rebuilt() {
  // A rebuild replaces the prismd file while an old daemon keeps running its deleted copy: its
  // answers then lag behind this REPL (same version string, older code).
  json status = client_->request("daemon/status", json::object(), std::chrono::seconds(30));
  if (!status.contains("pid") || !status["pid"].is_number_integer()) return;
  daemon_pid_ = status["pid"].get<int64_t>();
  char exe[4096];
  std::string link = "/proc/" + std::to_string(status["pid"].get<int64_t>()) + "/exe";
  ssize_t n = ::readlink(link.c_str(), exe, sizeof exe - 1);
  if (n <= 0) return;  // another user's process or no /proc: nothing to tell
  std::string path(exe, static_cast<size_t>(n));
  const std::string deleted = " (deleted)";
  if (path.size() > deleted.size() && path.compare(path.size() - deleted.size(), deleted.size(), deleted) == 0)
    warnings_.push_back("the running prismd (pid " + std::to_string(status["pid"].get<int64_t>()) +
                        ") was started from a binary that has since been rebuilt; `prism -c \"daemon stop\"` restarts it");
}

json Session::call(const std::string& method, const json& params) {
  struct Reset {
    std::atomic<int64_t>& id;
    ~Reset() { id.store(0); }
  } reset{active_request_};
  return client_->request(method, params, std::chrono::hours(24), [this](int64_t id) { active_request_.store(id); });
}

void Session::cancel_active_request() {
  int64_t id = active_request_.load();
  if (id == 0) return;
  json cancel = {{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", id}}}};
  client_->send_raw(protocol::encode_frame(cancel.dump()));
}

void Session::refresh_program_names() {
  json list = client_->request("program/list", json::object(), std::chrono::seconds(30));
  program_names_.clear();
  for (const auto& p : list.value("programs", json::array())) program_names_.push_back(p.value("name", ""));
}

CommandOutput Session::execute(const std::string& command, const Origin& origin) {
  if (is_program_block(command)) return define_program(command, origin);
  if (const size_t quote = unclosed_quote(command); quote != std::string::npos)
    throw CommandError("unterminated quote: this '\"' is never closed").at(command.substr(quote));
  std::vector<std::string> words = split_words(command);
  if (words.empty()) return {};
  std::string name = words[0];
  std::vector<std::string> args(words.begin() + 1, words.end());
  const CommandSpec* spec = find_command(name);
  if (!spec) {
    throw CommandError("unknown command '" + name + "'" + did_you_mean(name) + " (type `help` for the list of commands)");
  }
  if (!spec->handler) throw CommandError("command '" + spec->name + "' runs nothing: its row in repl/commands.cpp names no handler");
  return (this->*spec->handler)(args);
}

CommandOutput Session::quit(const std::vector<std::string>&) {
  quit_ = true;
  return {json{{"quit", true}}, ""};
}

std::string Session::source_of(const std::string& uri) const {
  if (auto it = typed_sources_.find(uri); it != typed_sources_.end()) return it->second;
  std::ifstream in(uri.rfind("file://", 0) == 0 ? uri.substr(7) : uri);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandOutput Session::document_report(const json& state, const std::string& what, const Origin& typed) {
  std::string uri = state.value("uri", "");
  bool is_typed = uri.rfind(kTypedScheme, 0) == 0;
  std::string file = is_typed ? typed.name : display_path(uri);
  int line_offset = is_typed ? typed.line - 1 : 0;
  std::string source = source_of(uri);
  std::string text;
  int errors = 0;
  for (const auto& d : state.value("diagnostics", json::array())) {
    if (d.value("severity", 1) == 1) ++errors;
    text += diagnostic_text(file, d, source, line_offset) + "\n";
  }
  std::vector<std::string> names;
  for (const auto& p : state.value("programs", json::array())) names.push_back(p.get<std::string>());
  refresh_program_names();
  if (errors > 0) {
    text += file + ": " + std::to_string(errors) + (errors == 1 ? " error" : " errors");
    throw CommandError(text, state, /*located=*/true);
  }
  text += what + ": " + (names.empty() ? "no programs" : join(names, ", ")) + "\n";
  if (state.contains("replaced") && state["replaced"].is_array())
    for (const auto& old : state["replaced"]) {
      std::string old_uri = old.get<std::string>();
      typed_sources_.erase(old_uri);
      text += "  (replaces the definition from " + (old_uri.rfind(kTypedScheme, 0) == 0 ? std::string("the prompt") : display_path(old_uri)) + ")\n";
    }
  return {state, text};
}

CommandOutput Session::define_program(const std::string& text, const Origin& origin) {
  std::string name = program_block_name(text);
  std::string uri = kTypedScheme + (name.empty() ? std::string("unnamed") : name);
  // A block that does not compile is not kept: the daemon keeps the program's previous
  // definition, if any, and answers with the diagnostics (shown against this text).
  std::optional<std::string> previous;
  if (auto it = typed_sources_.find(uri); it != typed_sources_.end()) previous = it->second;
  typed_sources_[uri] = text;
  int64_t version = ++versions_[uri];
  json state = call("program/open", {{"uri", uri}, {"text", text}, {"version", version}, {"replace", true}, {"rejectOnError", true}});
  try {
    return document_report(state, "defined", origin);
  } catch (const CommandError& e) {
    if (!state.value("rejected", false)) throw;
    if (previous) typed_sources_[uri] = *previous;
    else typed_sources_.erase(uri);
    const bool defined = std::find(program_names_.begin(), program_names_.end(), name) != program_names_.end();
    throw CommandError(std::string(e.what()) + "; not kept" + (defined ? " (the previous definition stays)" : ""), e.data(), true);
  }
}

namespace {
// Why `path` cannot be opened as a program file, in words ("no such file", "… is not a regular
// file (a FIFO)"); empty when it is a regular file. Nothing is read: a FIFO never blocks.
std::string not_openable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno == ENOENT ? "no such file" : std::strerror(errno);
  return not_regular_reason(path, st.st_mode);
}
}  // namespace

CommandOutput Session::open(const std::vector<std::string>& args) {
  if (args.size() != 1) throw CommandError(usage_error("open", "open takes one path"));
  std::string path = absolute_path(args[0]);
  if (std::string why = not_openable(path); !why.empty()) throw CommandError("cannot open " + args[0] + ": " + why).at(args[0]);
  json state = call("program/open", {{"uri", "file://" + path}, {"replace", true}});
  return document_report(state, "opened " + display_path(path));
}

CommandOutput Session::close(const std::vector<std::string>& args) {
  if (args.size() != 1) throw CommandError(usage_error("close", "close takes one path or program name"));
  // A program's name closes the document that defines it (typed here, at another prompt or in
  // an earlier session, or a file); anything else is a file's path.
  const bool is_uri = args[0].rfind(kTypedScheme, 0) == 0 || args[0].find("://") != std::string::npos;
  std::string uri = is_uri ? args[0] : "file://" + absolute_path(args[0]);
  json list = call("program/list", json::object());
  for (const auto& p : list.value("programs", json::array()))
    if (p.value("name", "") == args[0]) uri = p.value("uri", uri);
  call("program/close", {{"uri", uri}});
  typed_sources_.erase(uri);
  refresh_program_names();
  return {json{{"closed", uri}}, "closed " + args[0] + "\n"};
}

CommandOutput Session::programs(const std::vector<std::string>&) {
  json list = call("program/list", json::object());
  Table t({"PROGRAM", "INPUTS", "OUTPUTS", "FILE"});
  for (const auto& p : list.value("programs", json::array())) {
    std::vector<std::string> ins, outs;
    for (const auto& i : p.value("inputs", json::array())) ins.push_back(tensor_decl(i));
    for (const auto& o : p.value("outputs", json::array())) outs.push_back(tensor_type(o));
    std::string uri = p.value("uri", "");
    t.add({p.value("name", ""), join(ins, ", "), join(outs, ", "),
           uri.rfind(kTypedScheme, 0) == 0 ? "(typed)" : display_path(uri)});
  }
  if (list.value("programs", json::array()).empty()) return {list, "no programs are open (try `open PATH`)\n"};
  return {list, t.render()};
}

CommandOutput Session::show(const std::vector<std::string>& args) {
  if (args.size() != 1) throw CommandError(usage_error("show", "show takes one program name"));
  json p = call("program/show", {{"program", args[0]}});
  std::ostringstream out;
  out << p.value("signature", "") << "\n";
  std::string uri = p.value("uri", "");
  if (!uri.empty() && uri.rfind(kTypedScheme, 0) != 0) out << "  from " << display_path(uri) << "\n";
  Table t({"VALUE", "OP", "TYPE"});
  for (const auto& i : p.value("inputs", json::array())) t.add({i.value("name", ""), "input", tensor_type(i)});
  // Returned values are marked; one the source never named (`return matmul(Y, W)`) gets its row.
  std::map<std::string, bool> returned;
  for (const auto& o : p.value("outputs", json::array())) returned[o.value("name", "")] = true;
  auto label = [&](const json& v) {
    std::string name = v.value("name", "");
    return returned.count(name) ? name + " (output)" : name;
  };
  for (const auto& v : p.value("values", json::array())) {
    t.add({label(v), v.value("op", ""), tensor_type(v)});
    returned.erase(v.value("name", ""));
  }
  for (const auto& o : p.value("outputs", json::array()))
    if (returned.count(o.value("name", ""))) t.add({label(o), o.value("op", ""), tensor_type(o)});
  out << "\n" << t.render("  ") << "\nlowered:\n";
  std::istringstream lowered(p.value("lowered", ""));
  for (std::string line; std::getline(lowered, line);) out << "  " << line << "\n";
  CommandOutput shown{p, out.str()};
  shown.verbatim = true;
  return shown;
}

namespace {

// A value of a run's output as the protocol gives it: a number, or "NaN", "Infinity", "-Infinity".
std::string value_text(const json& v) {
  if (v.is_number()) return number(v.get<double>());
  const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  return s == "Infinity" ? "Inf" : s == "-Infinity" ? "-Inf" : s;
}

// "Y: 3 NaN, 1 +Inf of 512 values (not in the sums)\n" for an output with values that are not finite.
std::string non_finite_text(const json& o) {
  const json counts = o.value("nonFinite", json::object());
  const int64_t nan = counts.value("nan", int64_t{0}), pos = counts.value("posInf", int64_t{0}), neg = counts.value("negInf", int64_t{0});
  if (nan + pos + neg == 0) return "";
  int64_t size = 1;
  for (const auto& d : o.value("shape", json::array())) size *= d.get<int64_t>();
  std::vector<std::string> parts;
  if (nan) parts.push_back(std::to_string(nan) + " NaN");
  if (pos) parts.push_back(std::to_string(pos) + " +Inf");
  if (neg) parts.push_back(std::to_string(neg) + " -Inf");
  return o.value("name", "") + ": " + join(parts, ", ") + " of " + std::to_string(size) + " values (not in the sums)\n";
}

}  // namespace

CommandOutput Session::run(const std::vector<std::string>& args) {
  if (args.empty()) throw CommandError(usage_error("run", "run needs a program name"));
  json params = {{"program", args[0]}, {"bindings", json::object()}};
  json inputs = json::object();
  auto value_of = [&](size_t& i, const std::string& flag) -> std::string {
    if (i + 1 >= args.size()) throw CommandError(usage_error("run", flag + " needs a value")).at(flag);
    return args[++i];
  };
  std::set<std::string> given;  // a flag given twice is an error, never a silent second value
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    int64_t n = 0;
    if ((a == "--seed" || a == "--head" || a == "--out") && !given.insert(a).second)
      throw CommandError(usage_error("run", a + " given twice")).at(a);
    if (a == "--seed") {
      std::string v = value_of(i, a);
      if (!parse_int(v, n) || n < 0) throw CommandError(usage_error("run", "--seed wants a non-negative integer, not '" + v + "'")).at(a + " " + v);
      params["seed"] = n;
    } else if (a == "--head") {
      std::string v = value_of(i, a);
      if (!parse_int(v, n) || n < 0) throw CommandError(usage_error("run", "--head wants a non-negative integer, not '" + v + "'")).at(a + " " + v);
      params["head"] = n;
    } else if (a == "--in") {
      std::string v = value_of(i, a);
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        throw CommandError(usage_error("run", "--in wants INPUT=PATH, not '" + v + "'")).at(v);
      if (inputs.contains(v.substr(0, eq))) throw CommandError(usage_error("run", "--in " + v.substr(0, eq) + " given twice")).at(v);
      inputs[v.substr(0, eq)] = absolute_path(v.substr(eq + 1));
    } else if (a == "--out") {
      params["output"] = absolute_path(value_of(i, a));
    } else if (size_t eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) != 0) {
      std::string dim = a.substr(0, eq), v = a.substr(eq + 1);
      if (dim.empty() || !parse_int(v, n) || n <= 0)
        throw CommandError(usage_error("run", "binding '" + a + "' wants DIM=POSITIVE_INTEGER")).at(a);
      if (params.contains("bindings") && params["bindings"].contains(dim)) throw CommandError(usage_error("run", dim + " given twice")).at(a);
      params["bindings"][dim] = n;
    } else {
      throw CommandError(usage_error("run", "unexpected argument '" + a + "'")).at(a);
    }
  }
  if (!inputs.empty()) params["inputs"] = inputs;
  json r = call("program/run", params);
  // Inputs from files beside others drawn at random: say which were drawn.
  std::string drawn_note;
  std::vector<std::string> drawn = r.value("randomInputs", std::vector<std::string>{});
  if (!inputs.empty() && !drawn.empty())
    drawn_note = "note: " + join(drawn, ", ") + (drawn.size() == 1 ? " was" : " were") + " drawn at random (seed " +
                 std::to_string(params.value("seed", int64_t{0})) + "); give --in NAME=FILE.npy for " + (drawn.size() == 1 ? "it" : "them") + "\n";

  std::ostringstream out;
  std::vector<std::string> binds;
  const json bindings = r.value("bindings", json::object());  // items() must not outlive it
  for (const auto& [k, v] : bindings.items()) binds.push_back(k + "=" + v.dump());
  out << r.value("program", args[0]) << "  " << join(binds, " ") << "  seed " << params.value("seed", int64_t{0})
      << "  (" << elapsed_ms(r.value("elapsedMs", 0.0)) << ")\n";
  Table t({"OUTPUT", "TYPE", "SUM", "ABS SUM", "FIRST VALUES"});
  std::string non_finite;
  for (const auto& o : r.value("outputs", json::array())) {
    std::vector<std::string> head;
    for (const auto& v : o.value("head", json::array())) head.push_back(value_text(v));
    json checksum = o.value("checksum", json::object());
    t.add({o.value("name", ""), tensor_type(o), number(checksum.value("sum", 0.0)),
           number(checksum.value("absSum", 0.0)), join(head, " ")});
    non_finite += non_finite_text(o);
  }
  out << t.render() << non_finite << drawn_note;
  for (const auto& o : r.value("outputs", json::array()))
    if (o.contains("file")) out << "wrote " << o.value("name", "") << " to " << display_path(o.value("file", "")) << "\n";
  return {r, out.str()};
}

json Session::call_with_progress(const std::string& method, json params, const std::string& kind) {
  if (progress_sink_) params["workDoneToken"] = "prism-" + kind + "-" + std::to_string(++progress_tokens_);
  try {
    json r = call(method, params);
    if (progress_sink_) progress_sink_(json{{"kind", "end"}});
    return r;
  } catch (...) {
    if (progress_sink_) progress_sink_(json{{"kind", "end"}});
    throw;
  }
}

CommandOutput Session::daemon(const std::vector<std::string>& args) {
  if (args.size() != 1 || (args[0] != "status" && args[0] != "stop"))
    throw CommandError(usage_error("daemon", "daemon wants `status` or `stop`"));
  if (args[0] == "stop") {
    call("daemon/stop", json::object());
    quit_ = true;  // nothing left to talk to
    return {json{{"stopped", true}}, "daemon stopped\n"};
  }
  json s = call("daemon/status", json::object());
  std::ostringstream out;
  for (const auto& [k, v] : s.items()) {
    if (k == "targets" && v.is_array()) {
      out << "targets:\n";
      for (const auto& t : v)
        out << "  " << t.value("name", "") << ": " << (t.value("available", false) ? "available" : "not available") << " ("
            << t.value("detail", "") << ")\n";
      continue;
    }
    out << k << ": " << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
  }
  return {s, out.str()};
}

CommandOutput Session::equiv(const std::vector<std::string>& args) {
  json limits = json::object();
  std::vector<std::string> sides;
  std::string expect = "proved";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--expect") {
      if (i + 1 >= args.size()) throw CommandError(usage_error("equiv", a + " needs a value")).at(a);
      expect = args[++i];
      if (expect != "proved" && expect != "refuted" && expect != "unknown")
        throw CommandError(usage_error("equiv", "--expect wants proved, refuted or unknown, not '" + expect + "'")).at(a + " " + expect);
    } else if (a == "--nodes" || a == "--iterations" || a == "--seconds") {
      if (i + 1 >= args.size()) throw CommandError(usage_error("equiv", a + " needs a value"));
      const std::string& v = args[++i];
      double x = 0;
      if (!parse_positive(v, x)) throw CommandError(usage_error("equiv", a + " wants a positive number, not '" + v + "'"));
      if (a == "--seconds")
        limits["seconds"] = x;
      else
        limits[a.substr(2)] = static_cast<int64_t>(x);
    } else {
      sides.push_back(a);
    }
  }
  if (sides.size() < 2) throw CommandError(usage_error("equiv", "equiv needs two sides"));
  // The first word is A; B is the rest of the line (an expression may contain blanks).
  std::vector<std::string> rest(sides.begin() + 1, sides.end());
  json params = {{"a", sides[0]}, {"b", join(rest, " ")}};
  if (!limits.empty()) params["limits"] = limits;
  json r = call("program/equivalent", params);

  // --json form: the protocol's result whole (result, stopReason, explanation or counterexample, …).
  json data = r;
  if (!data.contains("result")) data["result"] = "unknown";

  std::ostringstream out;
  std::string result = data["result"];
  // A proof is over the reals; what floats do is said on its own line (docs/design.md, "Numerics").
  out << (result == "proved" ? "proved over the reals" : result) << " (" << data.value("stopReason", "") << ")\n  a: " << data.value("a", "")
      << "\n  b: " << data.value("b", "") << "\n";
  if (r.contains("floatingPoint")) {
    const json& f = r["floatingPoint"];
    if (f.value("result", "") == "refuted")
      out << "refuted in floating point on " << f.value("set", "") << ": " << f.value("detail", "") << "\n";
    else
      out << "equal in floating point on " << f.value("inputs", 0) << " checked inputs, including large magnitudes\n";
  }
  if (r.contains("realsOnlyRules")) out << "the proof uses rules exact only over the reals: " << join(r["realsOnlyRules"].get<std::vector<std::string>>(), ", ") << "\n";
  if (result == "refuted") {
    const json& c = r["counterexample"];
    std::vector<std::string> binds;
    const json bindings = c.value("bindings", json::object());  // items() must not outlive it
    for (const auto& [k, v] : bindings.items()) binds.push_back(k + "=" + v.dump());
    std::string by = c.contains("maxAbsDiff") && c["maxAbsDiff"].is_number() ? " by " + number(c["maxAbsDiff"].get<double>()) : "";
    out << "they differ" << by << " at " << join(binds, " ") << " (seed " << c.value("seed", 0) << ")\n";
    if (!c.value("detail", "").empty()) out << "  " << c.value("detail", "") << "\n";
  }
  if (r.contains("explanation")) {
    out << "proof:\n";
    std::istringstream lines(r.value("explanation", ""));
    for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
  }
  if (r.contains("message")) out << r.value("message", "") << "\n";
  CommandOutput output{data, out.str()};
  // A script checks a claim: anything but the expected result fails it (exit status 1).
  if (result != expect) output.failure = "equiv: " + result + ", expected " + expect + (expect == "proved" ? " (--expect " + result + " accepts it)" : "");
  return output;
}

CommandOutput Session::egraph(const std::vector<std::string>&) {
  json s = call("egraph/stats", json::object());
  std::ostringstream out;
  out << "nodes " << s.value("nodes", 0) << ", classes " << s.value("classes", 0) << ", memory "
      << number(s.value("memoryBytes", 0) / 1048576.0) << " MiB, node cap " << s.value("nodeCap", 0) << "\n"
      << "programs " << s.value("programs", 0) << ", terms added " << s.value("termsAdded", 0) << ", shared "
      << s.value("termsShared", 0) << "\n";
  if (s.value("capHit", false)) out << "node cap reached: " << s.value("capMessage", "") << "\n";
  const json all_rules = s.value("rules", json::array());
  std::vector<json> rules(all_rules.begin(), all_rules.end());
  std::stable_sort(rules.begin(), rules.end(), [](const json& x, const json& y) {
    return x.value("applications", 0) > y.value("applications", 0);
  });
  Table t({"RULE", "MATCHES", "APPLIED", "TIME MS"});
  for (const auto& r : rules)
    t.add({r.value("name", ""), std::to_string(r.value("matches", 0)), std::to_string(r.value("applications", 0)),
           number(r.value("timeMs", 0.0))});
  if (!rules.empty()) out << "\n" << t.render();
  return {s, out.str()};
}

CommandOutput Session::search(const std::vector<std::string>& given) {
  std::vector<std::string> args = given;
  const std::string dump_after = take_dump_after("search", args);
  if (args.empty()) throw CommandError(usage_error("search", "search needs a program name"));
  json limits = json::object();
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    static const std::map<std::string, std::string> flags = {
        {"--budget", "budgetSeconds"}, {"--max-ops", "maxOps"}, {"--max-kernels", "maxKernels"},
        {"--max-accumulators", "maxAccumulators"}, {"--library-kernels", "libraryKernels"}, {"--kernel-cuts", "kernelCuts"},
        {"--threads", "threads"}};
    auto flag = flags.find(a);
    if (flag == flags.end()) throw CommandError(usage_error("search", "unexpected argument '" + a + "'"));
    if (i + 1 >= args.size()) throw CommandError(usage_error("search", a + " needs a value"));
    const std::string& v = args[++i];
    int64_t n = 0;
    if (a == "--budget") {
      double s = 0;
      if (!parse_positive(v, s)) throw CommandError(usage_error("search", "--budget wants seconds > 0, not '" + v + "'"));
      limits[flag->second] = s;
    } else {
      if (a == "--library-kernels" || a == "--kernel-cuts") {
        if (!parse_int(v, n) || n < 0 || n > 3) throw CommandError(usage_error("search", a + " wants 0 to 3, not '" + v + "'"));
      } else if (!parse_int(v, n) || n < 1) {
        throw CommandError(usage_error("search", a + " wants a positive integer, not '" + v + "'"));
      }
      limits[flag->second] = n;
    }
  }
  json params = {{"program", args[0]}};
  if (!limits.empty()) params["limits"] = limits;
  if (!dump_after.empty()) params["dumpAfter"] = dump_after;
  json r = call_with_progress("search/run", params, "search");

  const json stats = r.value("stats", json::object());
  std::ostringstream out;
  out << dump_text(r);
  out << r.value("program", args[0]) << ": " << r.value("candidates", 0) << " verified "
      << (r.value("candidates", 0) == 1 ? "family" : "families") << " (" << stats.value("stopReason", "") << ", "
      << elapsed_s(stats.value("totalSeconds", 0.0))
      << (stats.value("fromStore", false) ? ", stored: the search this daemon or an earlier one made" : "") << ")\n";
  Table t({"GENERATED", "PRUNED: EXPRESSION", "DIMS", "STRUCTURE", "HARDWARE", "DUPLICATES", "FINGERPRINTED",
           "REJECTED", "UNPROVED", "VERIFIED"});
  auto n = [&](const char* k) { return std::to_string(stats.value(k, int64_t{0})); };
  t.add({n("generated"), n("prunedExpression"), n("prunedDims"), n("prunedStructure"), n("prunedHardware"),
         n("duplicates"), n("fingerprinted"), n("rejected"), n("unproved"), n("verified")});
  t.split_when_narrow();
  out << t.render();
  if (r.value("candidates", 0) == 0) out << "nothing found: " << stats.value("emptyReason", std::string("no family verified")) << "\n";
  else out << "`candidates " << args[0] << "` lists them.\n";
  return {r, out.str()};
}

CommandOutput Session::candidates(const std::vector<std::string>& args) {
  if (args.size() != 1) throw CommandError(usage_error("candidates", "candidates takes one program name"));
  json r = call("search/candidates", {{"program", args[0]}});
  const json families = r.value("candidates", json::array());
  CommandOutput output;
  output.data = r;
  // The clauses every family shares once above the table; each row the ones that tell it apart
  // (a cut summary would show only the shared start of every row).
  std::vector<std::string> summaries;
  for (const auto& c : families) summaries.push_back(c.value("summary", ""));
  const SharedClauses split = shared_clauses(summaries);
  Table t({"ID", "KERNELS", "PARAMETERS", "VERIFIED", split.shared.empty() ? "SUMMARY" : "DIFFERS IN"});
  t.wrap_last();  // what tells families apart is often the end of a summary: none is cut
  size_t row = 0;
  for (const auto& c : families) {
    std::vector<std::string> parameters;
    for (const auto& p : c.value("parameters", json::array())) parameters.push_back(p.get<std::string>());
    t.add({std::to_string(c.value("id", 0)), std::to_string(c.value("kernels", 0)), join(parameters, " "),
           c.value("verified", false) ? "proved" : "no", split.rest[row++]});
    json line = c;
    line.erase("proof");  // `explain` shows it; one line per family stays readable
    line["program"] = r.value("program", args[0]);
    output.json_lines.push_back(std::move(line));
  }
  // print_output wraps the shared clauses' line to the terminal (fit_lines).
  const std::string shared = split.shared.empty() ? "" : "every family: " + split.shared + "\n";
  output.text = families.empty() ? "no verified families for " + args[0] + "\n" : shared + t.render();
  return output;
}

CommandOutput Session::explain(const std::vector<std::string>& given) {
  std::vector<std::string> args;
  for (const std::string& a : given)
    if (a != "--no-proof") args.push_back(a);
  const bool proof = args.size() == given.size();
  int64_t id = 0;
  if (args.size() != 2 || !parse_int(args[1], id)) throw CommandError(usage_error("explain", "explain takes a program name and a candidate id"));
  json r = call("search/candidates", {{"program", args[0]}});
  for (const auto& c : r.value("candidates", json::array())) {
    if (c.value("id", int64_t{0}) != id) continue;
    std::ostringstream out;
    out << "candidate " << id << " of " << args[0] << ": " << c.value("summary", "") << "\n\n";
    std::istringstream text(c.value("text", ""));
    for (std::string line; std::getline(text, line);) out << "  " << line << "\n";
    const std::string steps = c.value("proof", "");
    if (!proof) {
      const auto lines = std::count(steps.begin(), steps.end(), '\n');
      out << "\nproof: " << lines << " lines (`explain " << args[0] << " " << id << "` shows them)\n";
      return {c, out.str()};
    }
    out << "\nproof (e-graph, symbolic sizes):\n";
    std::istringstream text_of_proof(steps);
    for (std::string line; std::getline(text_of_proof, line);) out << "  " << line << "\n";
    return {c, out.str()};
  }
  throw CommandError("no candidate " + args[1] + " for " + args[0] + " (`candidates " + args[0] + "` lists them)");
}

CommandOutput Session::help(const std::vector<std::string>& args) {
  if (args.empty()) return {json{{"help", help_overview()}}, help_overview()};
  std::string text = help_for(args[0]);
  if (text.empty()) throw CommandError("no command '" + args[0] + "'" + did_you_mean(args[0], {"ops"}) + " (type `help` for the list, `help ops` for the ops)");
  return {json{{"help", text}}, text};
}

}  // namespace prism::repl
