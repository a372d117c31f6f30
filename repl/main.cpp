// prism: the REPL. Interactive on a terminal; a script runner for `prism < file`, `prism FILE`
// and `prism -c "cmd; cmd"`, which print results only and stop at the first error (exit 1).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "protocol/endpoint.h"
#include "repl/commands.h"
#include "repl/daemon_launcher.h"
#include "repl/interrupt.h"
#include "repl/line_editor.h"
#include "repl/progress_bar.h"
#include "repl/script.h"
#include "repl/session.h"

using namespace prism::repl;

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoDaemon = 3;

const char* kUsage =
    "usage: prism [options] [FILE]\n"
    "\n"
    "Interactive on a terminal; otherwise runs the commands of FILE, of -c, or of standard input,\n"
    "printing results only and exiting 1 at the first error.\n"
    "\n"
    "options:\n"
    "  -c COMMANDS      run COMMANDS (separated by ';' or newlines) and exit\n"
    "  --json           print one JSON object per command result\n"
    "  --socket PATH    the daemon's Unix socket (default: $PRISM_SOCKET, else the per-user one), or\n"
    "                   tcp:HOST:PORT for a daemon's loopback listener (its token from tcp-PORT.token\n"
    "                   in the runtime directory, or $PRISM_TOKEN_FILE)\n"
    "  --no-start       do not start a daemon when none answers\n"
    "  --prismd PATH    the daemon binary to start (default: next to prism, then $PATH)\n"
    "  --version        print the version\n"
    "  -h, --help       this help\n";

struct Options {
  bool json = false;
  std::string commands;  // -c
  bool have_commands = false;
  std::string file;
  LaunchOptions launch;
};

void print_output(const CommandOutput& out, bool json) {
  if (json && !out.json_lines.empty()) {
    for (const auto& line : out.json_lines) std::cout << line.dump() << "\n";
  } else if (json) {
    if (!out.data.is_null()) std::cout << out.data.dump() << "\n";
  } else {
    // What the daemon answered may hold text from files and other clients: never raw escapes.
    std::cout << visible_text(out.verbatim ? out.text : fit_lines(out.text, Table::terminal_columns()));
  }
  std::cout.flush();
}

// Where a failed command went wrong, "FILE:LINE:COLUMN": the command's start, or the word the
// error is about (a binding, a flag) when it names one.
struct ErrorPlace {
  std::string file;
  int line = 1, column = 1;
  std::string text() const { return file + ":" + std::to_string(line) + ":" + std::to_string(column); }
};

ErrorPlace place_of(const ScriptCommand& cmd, const std::string& where, const std::string& word) {
  ErrorPlace p{where.empty() ? "<prompt>" : where, cmd.line, cmd.column};
  // Only on the command's first line: a program block's own errors are located by the daemon.
  const size_t first_line = cmd.text.find('\n');
  if (size_t at = word.empty() ? std::string::npos : cmd.text.find(word); at != std::string::npos && at < first_line) p.column += int(at);
  return p;
}

// The word of `command` a daemon's error is about: an invalid-params error's binding
// ("bindings.n" -> "n="), or the argument that names a failed request's subject (the dim of
// "n=8", the input of "--in X=x.npy", a program or a candidate as the word itself).
std::string rpc_word(const RpcError& e, const std::string& command) {
  if (!e.data().is_object()) return "";
  const std::string field = e.data().value("field", "");
  if (field.rfind("bindings.", 0) == 0) return field.substr(9) + "=";
  const std::string subject = e.data().value("subject", "");
  if (subject.empty()) return "";
  std::istringstream words(command.substr(0, command.find('\n')));
  std::string word;
  for (words >> word; words >> word;)  // the command's name never is the subject
    if (word == subject || word.rfind(subject + "=", 0) == 0) return word;
  return "";
}

// Reports a failed command: to stderr for people, and with --json as one object on stdout too,
// {"error": {"message", "file", "line", "column", "command", "code"?, "data"?}}.
void report_error(const ScriptCommand& cmd, bool json, bool interactive, const std::string& where, const std::string& message,
                  const std::string& word, bool located, int code = 0, const nlohmann::json& data = nullptr) {
  const ErrorPlace place = place_of(cmd, where, word);
  const std::string shown = visible_text(message);  // it may quote the command, or a file's text
  if (located) std::cerr << shown << "\n";
  else if (interactive) std::cerr << "error: " << shown << "\n";
  else std::cerr << "prism: " << visible_text(place.text()) << ": error: " << shown << "\n";
  if (!json) return;
  nlohmann::json error = {{"message", message}, {"file", place.file}, {"line", place.line}, {"column", place.column}, {"command", cmd.text}};
  if (code != 0) error["code"] = code;
  if (!data.is_null()) error["data"] = data;
  std::cout << nlohmann::json{{"error", error}}.dump() << "\n" << std::flush;
}

// What the daemon announced (another client's definition, a reloaded file, a new daemon), on stderr.
void print_notes(Session& session, bool interactive) {
  for (const std::string& note : session.take_notes()) std::cerr << (interactive ? "" : "prism: ") << "note: " << visible_text(note) << "\n";
}

// Runs one command and reports its outcome; returns false when it failed.
bool run_command(Session& session, const ScriptCommand& cmd, bool json, bool interactive, const std::string& where) {
  struct Notes {  // what the daemon announced meanwhile comes before the command's own output
    Session& session;
    bool interactive;
    ~Notes() { print_notes(session, interactive); }
  };
  try {
    session.poll();
    print_notes(session, interactive);
    Session::Origin origin;
    if (!where.empty()) origin = {where, cmd.line};
    CommandOutput out = [&] {
      Notes notes{session, interactive};
      return session.execute(cmd.text, origin);
    }();
    print_output(out, json);
    if (out.failure.empty() || interactive) return true;
    report_error(cmd, json, interactive, where, out.failure, "", false);
    return false;
  } catch (const CommandError& e) {
    report_error(cmd, json, interactive, where, e.what(), e.word(), e.located(), 0, e.data());
  } catch (const RpcError& e) {
    report_error(cmd, json, interactive, where, e.what(), rpc_word(e, cmd.text), false, e.code(), e.data());
  } catch (const ConnectionError& e) {
    report_error(cmd, json, interactive, where, std::string("lost the connection to prismd: ") + e.what(), "", false);
    throw;
  } catch (const std::exception& e) {
    // A reply this REPL did not expect (e.g. from a daemon of another version): report, never crash.
    report_error(cmd, json, interactive, where, std::string("unexpected reply from prismd: ") + e.what(), "", false);
  }
  return false;
}

std::vector<std::string> complete(const Session& session, const std::vector<std::string>& before, const std::string& prefix) {
  std::vector<std::string> out;
  auto offer = [&](const std::string& word) {
    if (word.rfind(prefix, 0) == 0) out.push_back(word);
  };
  if (before.empty()) {
    for (const auto& c : command_table()) offer(c.name);
    return out;
  }
  const CommandSpec* spec = find_command(before[0]);
  if (!spec || before.size() != 1) return out;
  switch (spec->first_arg) {
    case CommandSpec::Arg::Program:
      for (const auto& p : session.program_names()) offer(p);
      break;
    case CommandSpec::Arg::Subcommand:
      for (const auto& s : spec->subcommands) offer(s);
      break;
    case CommandSpec::Arg::None:
      if (spec->name == "help")
        for (const auto& c : command_table()) offer(c.name);
      break;
    case CommandSpec::Arg::Path:
      return path_candidates(prefix);
  }
  return out;
}

int interactive_loop(Session& session, const Options& opt) {
  std::cout << "prism " << PRISM_VERSION << " — connected to prismd at " << opt.launch.socket_path
            << "\nType `help` for the commands, `open examples/rms_linear.prism` to start.\n";
  LineEditor editor(prism::protocol::state_dir() + "/history",
                    [&session](const auto& before, const auto& prefix) { return complete(session, before, prefix); });
  InterruptForwarder interrupts(session);
  ProgressBar bar;
  if (::isatty(2)) session.show_progress_with([&bar](const nlohmann::json& value) { bar.update(value); });
  CommandSplitter splitter;
  while (!session.quit_requested()) {
    // What other clients did meanwhile (a replaced program, a reloaded file, a daemon that went away).
    try {
      session.poll();
    } catch (const ConnectionError& e) {
      std::cerr << "error: lost the connection to prismd: " << e.what() << "\n";
      return kExitNoDaemon;
    }
    print_notes(session, true);
    std::string line;
    auto input = editor.read(splitter.pending() ? "   ...> " : "prism> ", line);
    if (input == LineEditor::Input::End) {
      std::cout << "\n";
      break;
    }
    if (input == LineEditor::Input::Interrupted) {
      // Like a shell: Ctrl-C drops the line (and an unfinished program block) and re-prompts.
      std::cout << "^C\n";
      splitter = CommandSplitter();
      continue;
    }
    editor.remember(line);
    splitter.feed_line(line);
    for (const auto& cmd : splitter.take()) {
      try {
        run_command(session, cmd, opt.json, true, "");
      } catch (const ConnectionError&) {
        return kExitNoDaemon;
      }
      if (session.quit_requested()) break;
    }
  }
  return 0;
}

int script(Session& session, const Options& opt, std::istream& in, const std::string& where) {
  CommandSplitter splitter;
  auto run_all = [&](std::vector<ScriptCommand> cmds) {
    for (const auto& cmd : cmds) {
      if (session.quit_requested()) return true;
      if (!run_command(session, cmd, opt.json, false, where)) return false;
    }
    return true;
  };
  try {
    for (std::string line; std::getline(in, line);) {
      splitter.feed_line(line);
      if (!run_all(splitter.take())) return kExitError;
    }
    return run_all(splitter.finish()) ? 0 : kExitError;
  } catch (const ConnectionError&) {
    return kExitNoDaemon;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  opt.launch.socket_path = prism::protocol::default_socket_path();
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        std::cerr << "prism: " << a << " needs a value\n" << kUsage;
        std::exit(kExitUsage);
      }
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--version") {
      std::cout << "prism " << PRISM_VERSION << "\n";
      return 0;
    } else if (a == "--json") {
      opt.json = true;
    } else if (a == "-c") {
      opt.commands = value();
      opt.have_commands = true;
    } else if (a == "--socket") {
      opt.launch.socket_path = value();
    } else if (a == "--no-start") {
      opt.launch.autostart = false;
    } else if (a == "--prismd") {
      opt.launch.prismd = value();
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "prism: unknown option " << a << "\n" << kUsage;
      return kExitUsage;
    } else if (opt.file.empty()) {
      opt.file = a;
    } else {
      std::cerr << "prism: more than one FILE given\n" << kUsage;
      return kExitUsage;
    }
  }

  std::ifstream file_in;
  if (!opt.file.empty()) {
    file_in.open(opt.file);
    if (!file_in) {
      std::cerr << "prism: cannot read " << opt.file << "\n";
      return kExitUsage;
    }
  }

  std::unique_ptr<Session> session;
  auto open_session = [&opt] {
    return std::make_unique<Session>(connect_or_start(opt.launch), [&opt] { return connect_or_start(opt.launch); },
                                     token_for(opt.launch.socket_path));
  };
  try {
    try {
      session = open_session();
    } catch (const ConnectionDropped&) {
      // A daemon that was dying as we connected (killed, or exiting idle) took the connection and
      // reset it: once more, when its socket refuses and a new daemon is started. (A server that
      // answers oddly is no reason to ask again.)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      session = open_session();
    }
    for (const auto& w : session->warnings()) std::cerr << "prism: warning: " << w << "\n";
  } catch (const std::exception& e) {
    std::cerr << "prism: " << e.what() << "\n";
    return kExitNoDaemon;
  }

  if (opt.have_commands) {
    std::istringstream in(opt.commands);
    return script(*session, opt, in, "-c");
  }
  if (!opt.file.empty()) return script(*session, opt, file_in, opt.file);
  if (::isatty(0)) return interactive_loop(*session, opt);
  return script(*session, opt, std::cin, "<stdin>");
}
