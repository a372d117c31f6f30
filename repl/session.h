// One REPL session: a connection to prismd and the commands that run over it. Knows nothing about
// terminals; main.cpp decides whether output is text or JSON and where errors go.
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "repl/client.h"
#include "repl/commands.h"

namespace prism::repl {

// A command that failed; `data` is what --json mode still prints (e.g. the diagnostics), if any.
// A `located` message already says where (compiler-style diagnostics) and is printed as it is.
class CommandError : public std::runtime_error {
 public:
  explicit CommandError(const std::string& message, json data = nullptr, bool located = false)
      : std::runtime_error(message), data_(std::move(data)), located_(located) {}
  const json& data() const { return data_; }
  bool located() const { return located_; }
  // The word of the command the error is about (its column is the error's): `throw
  // CommandError(…).at(word)`.
  CommandError& at(std::string word) {
    word_ = std::move(word);
    return *this;
  }
  const std::string& word() const { return word_; }

 private:
  json data_;
  bool located_;
  std::string word_;
};

struct CommandOutput {
  json data;                    // the result as one JSON object (--json mode)
  std::string text;             // the same for people
  std::vector<json> json_lines = {};  // when set, --json prints these, one object per line, instead
  std::string failure = {};     // printed, yet failed: why (equiv's result is not the one expected)
  bool verbatim = false;        // source to copy (`code`, a lowered program): never rewrapped to the terminal
};

// Where a command came from, so that errors in a typed program block name the script's line.
struct CommandOrigin {
  std::string name = "<typed>";
  int line = 1;
};

class Session {
 public:
  using Origin = CommandOrigin;

  // `reconnect` (optional) connects to the user's daemon again, starting one where none answers:
  // poll() calls it when the daemon went away between commands.
  // `token`: the daemon's secret for a TCP connection (daemon_launcher.h token_for), sent in
  // initialize; empty over a Unix socket.
  explicit Session(std::unique_ptr<Client> client, std::function<std::unique_ptr<Client>()> reconnect = {}, std::string token = "");

  // Between commands: takes the notifications that arrived (another client replaced a program,
  // a file was reloaded) and, when the daemon went away, reconnects and says so. Throws
  // ConnectionError when that fails.
  void poll();
  // What the daemon announced since the last call, as lines for the user ("rms_linear was
  // replaced by …"); printed before a command's output.
  std::vector<std::string> take_notes();

  // Runs one command or one `program { … }` block. Throws CommandError, RpcError or
  // ConnectionError.
  CommandOutput execute(const std::string& command, const Origin& origin = {});

  bool quit_requested() const { return quit_; }
  // Things worth telling the user once (e.g. a daemon of another version).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Program names for tab completion (refreshed after every command that may change them).
  const std::vector<std::string>& program_names() const { return program_names_; }
  // Id of the request in flight, or 0: what Ctrl-C cancels.
  int64_t active_request() const { return active_request_.load(); }
  // Sends $/cancelRequest for the request in flight; safe to call from another thread.
  void cancel_active_request();
  // Where `$/progress` of long commands goes (a terminal's progress bar); none: no progress asked.
  void show_progress_with(std::function<void(const json& value)> sink) { progress_sink_ = std::move(sink); }

 private:
  // The command table names the handlers below (commands.cpp): it is the dispatch.
  friend const std::vector<CommandSpec>& command_table();

  json call(const std::string& method, const json& params);
  // `call` of a long request with a progress bar (a workDoneToken "prism-KIND-N"), ended
  // whether the request answers or fails.
  json call_with_progress(const std::string& method, json params, const std::string& kind);
  // initialize/initialized, the version and rebuild warnings, the program names.
  void handshake();
  void on_notification(const json& message);
  void warn_if_daemon_rebuilt();
  CommandOutput define_program(const std::string& text, const Origin& origin);
  CommandOutput open(const std::vector<std::string>& args);
  CommandOutput close(const std::vector<std::string>& args);
  CommandOutput programs(const std::vector<std::string>& args);
  CommandOutput show(const std::vector<std::string>& args);
  CommandOutput run(const std::vector<std::string>& args);
  CommandOutput daemon(const std::vector<std::string>& args);
  CommandOutput equiv(const std::vector<std::string>& args);
  CommandOutput search(const std::vector<std::string>& args);
  CommandOutput candidates(const std::vector<std::string>& args);
  CommandOutput explain(const std::vector<std::string>& args);
  CommandOutput tune(const std::vector<std::string>& args);     // session_tune.cpp
  CommandOutput code(const std::vector<std::string>& args);
  CommandOutput export_kernel(const std::vector<std::string>& args);
  CommandOutput tuning_db(const std::vector<std::string>& args);
  CommandOutput batch(const std::vector<std::string>& args);
  CommandOutput egraph(const std::vector<std::string>& args);
  CommandOutput help(const std::vector<std::string>& args);
  CommandOutput quit(const std::vector<std::string>& args);
  // Turns a DocumentState into output; throws CommandError when it carries errors.
  CommandOutput document_report(const json& state, const std::string& what, const Origin& typed = {});
  std::string source_of(const std::string& uri) const;
  void refresh_program_names();

  std::unique_ptr<Client> client_;
  std::function<std::unique_ptr<Client>()> reconnect_;
  std::string token_;
  int64_t daemon_pid_ = 0;
  std::vector<std::string> notes_;
  bool names_stale_ = false;  // a notification changed the programs: refresh before the next command
  std::map<std::string, std::string> typed_sources_;  // uri → text of programs typed at the prompt
  std::map<std::string, int64_t> versions_;           // uri → last version sent
  std::vector<std::string> program_names_;
  std::atomic<int64_t> active_request_{0};
  bool quit_ = false;
  std::vector<std::string> warnings_;
  std::function<void(const json&)> progress_sink_;
  int64_t progress_tokens_ = 0;
};

// Absolute form of a user-given path, relative to the REPL's working directory (the daemon has
// its own).
std::string absolute_path(const std::string& path);

}  // namespace prism::repl
