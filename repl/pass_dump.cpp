#include "repl/pass_dump.h"

#include "repl/commands.h"
#include "repl/session.h"

namespace prism::repl {

std::string take_dump_after(const std::string& command, std::vector<std::string>& args) {
  std::string pass;
  for (size_t i = 0; i < args.size();) {
    if (args[i] != "--dump-after") {
      ++i;
      continue;
    }
    if (i + 1 >= args.size()) throw CommandError(usage_error(command, "--dump-after needs a pass's name")).at(args[i]);
    if (!pass.empty()) throw CommandError(usage_error(command, "--dump-after given twice")).at(args[i]);
    pass = args[i + 1];
    args.erase(args.begin() + long(i), args.begin() + long(i) + 2);
  }
  return pass;
}

std::string dump_text(const nlohmann::json& answer) {
  if (!answer.contains("dump")) return "";
  const nlohmann::json& dump = answer["dump"];
  const std::string pass = dump.value("pass", "");
  const nlohmann::json items = dump.value("items", nlohmann::json::array());
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    out += "-- after " + pass + " (" + std::to_string(i + 1) + " of " + std::to_string(items.size()) + ") --\n";
    std::string text = items[i].get<std::string>();
    if (!text.empty() && text.back() != '\n') text += "\n";
    out += text;
  }
  if (items.empty()) out += "-- after " + pass + ": nothing reached it --\n";
  if (const int64_t dropped = dump.value("dropped", int64_t{0}); dropped > 0)
    out += "-- " + std::to_string(dropped) + " more after " + pass + " not kept (at most " + std::to_string(items.size()) + ") --\n";
  return out;
}

}  // namespace prism::repl
