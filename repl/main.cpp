// prism: the REPL. Interactive on a terminal; a script runner for `prism < file`, `prism FILE`
// and `prism -c "cmd; cmd"`, which print results only and stop at the first error (exit 1).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "protocol/endpoint.h"
#include "repl/commands.h"
#include "repl/daemon_launcher.h"
#include "repl/interrupt.h"
#include "repl/line_editor.h"
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
    "  --socket PATH    the daemon's Unix socket (default: $PRISM_SOCKET, else the per-user one)\n"
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
  if (json) {
    if (!out.data.is_null()) std::cout << out.data.dump() << "\n";
  } else {
    std::cout << out.text;
  }
  std::cout.flush();
}

// Runs one command and reports its outcome; returns false when it failed.
bool run_command(Session& session, const ScriptCommand& cmd, bool json, bool interactive, const std::string& where) {
  std::string prefix = interactive ? "" : "prism: " + (where.empty() ? "" : where + ":" + std::to_string(cmd.line) + ": ");
  try {
    Session::Origin origin;
    if (!where.empty()) origin = {where, cmd.line};
    print_output(session.execute(cmd.text, origin), json);
    return true;
  } catch (const CommandError& e) {
    if (json && !e.data().is_null()) std::cout << e.data().dump() << "\n" << std::flush;
    if (e.located()) {
      std::cerr << e.what() << "\n";
    } else {
      std::cerr << prefix << "error: " << e.what() << "\n";
    }
  } catch (const RpcError& e) {
    std::cerr << prefix << "error: " << e.what() << "\n";
  } catch (const ConnectionError& e) {
    std::cerr << prefix << "error: lost the connection to prismd: " << e.what() << "\n";
    throw;
  } catch (const std::exception& e) {
    // A reply this REPL did not expect (e.g. from a daemon of another version): report, never crash.
    std::cerr << prefix << "error: unexpected reply from prismd: " << e.what() << "\n";
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
      break;  // libedit completes file names
  }
  return out;
}

int interactive_loop(Session& session, const Options& opt) {
  std::cout << "prism " << PRISM_VERSION << " — connected to prismd at " << opt.launch.socket_path
            << "\nType `help` for the commands, `open examples/rms_linear.prism` to start.\n";
  LineEditor editor(prism::protocol::state_dir() + "/history",
                    [&session](const auto& before, const auto& prefix) { return complete(session, before, prefix); });
  InterruptForwarder interrupts(session);
  CommandSplitter splitter;
  while (!session.quit_requested()) {
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
  try {
    session = std::make_unique<Session>(connect_or_start(opt.launch));
    for (const auto& w : session->warnings()) std::cerr << "prism: warning: " << w << "\n";
  } catch (const std::exception& e) {
    std::cerr << "prism: " << e.what() << "\n";
    return kExitNoDaemon;
  }

  if (opt.have_commands) {
    std::istringstream in(opt.commands);
    return script(*session, opt, in, "");
  }
  if (!opt.file.empty()) return script(*session, opt, file_in, opt.file);
  if (::isatty(0)) return interactive_loop(*session, opt);
  return script(*session, opt, std::cin, "<stdin>");
}
