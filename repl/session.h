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

namespace prism::repl {

// A command that failed; `data` is what --json mode still prints (e.g. the diagnostics), if any.
// A `located` message already says where (compiler-style diagnostics) and is printed as it is.
class CommandError : public std::runtime_error {
 public:
  explicit CommandError(const std::string& message, json data = nullptr, bool located = false)
      : std::runtime_error(message), data_(std::move(data)), located_(located) {}
  const json& data() const { return data_; }
  bool located() const { return located_; }

 private:
  json data_;
  bool located_;
};

struct CommandOutput {
  json data;                    // the result as one JSON object (--json mode)
  std::string text;             // the same for people
  std::vector<json> json_lines = {};  // when set, --json prints these, one object per line, instead
};

// Where a command came from, so that errors in a typed program block name the script's line.
struct CommandOrigin {
  std::string name = "<typed>";
  int line = 1;
};

class Session {
 public:
  using Origin = CommandOrigin;

  explicit Session(std::unique_ptr<Client> client);

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
  json call(const std::string& method, const json& params);
  void warn_if_daemon_rebuilt();
  CommandOutput define_program(const std::string& text, const Origin& origin);
  CommandOutput open(const std::vector<std::string>& args);
  CommandOutput close(const std::vector<std::string>& args);
  CommandOutput programs();
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
  CommandOutput egraph();
  CommandOutput help(const std::vector<std::string>& args);
  // Turns a DocumentState into output; throws CommandError when it carries errors.
  CommandOutput document_report(const json& state, const std::string& what, const Origin& typed = {});
  std::string source_of(const std::string& uri) const;
  void refresh_program_names();

  std::unique_ptr<Client> client_;
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
