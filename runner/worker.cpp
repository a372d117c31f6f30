// prism-runner's side of engine/backend/runner/runner.h. Commands, one per line:
//   inputs N SIZE_1 … SIZE_N PATH            read N dense f32 tensors from PATH        → ok
//   run BACKEND K SIZE_1 … SIZE_K \t OUT_PATH \t ATTACHMENT \t ARGUMENTS
//        hand a run to the worker half of the backend named BACKEND (Backend::serve,
//        engine/backend/runner/worker_call.h): K outputs of SIZE_i elements, written as f32 to
//        OUT_PATH ("-": a timing round, nothing written), ATTACHMENT a file the daemon's half
//        wrote ("" none), ARGUMENTS the backend's own words      → ok MEDIAN_MS MIN_MS RUNS
// Any failure the worker survives answers "error MESSAGE"; a kernel that crashes takes the
// worker with it, which is the point of running it here.
#include "runner/worker.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "engine/backend/runner/worker_call.h"
#include "engine/tune/backends.h"

namespace prism::runner {

namespace {

std::string take_inputs(backend::WorkerInputs& inputs, std::istringstream& args) {
  size_t n = 0;
  args >> n;
  std::vector<int64_t> sizes(n);
  for (auto& s : sizes) args >> s;
  std::string path;
  args >> std::ws;
  std::getline(args, path);
  const std::string error = inputs.read(path, sizes);
  return error.empty() ? "ok" : "error " + error;
}

// The text up to the next tab (or the end), taken off `rest`.
std::string field(std::string& rest) {
  const size_t tab = rest.find('\t');
  std::string out = rest.substr(0, tab);
  rest = tab == std::string::npos ? "" : rest.substr(tab + 1);
  return out;
}

std::string run(backend::WorkerInputs& inputs, std::istringstream& args) {
  std::string name;
  size_t k = 0;
  args >> name >> k;
  backend::WorkerCall call{inputs, std::vector<int64_t>(k), "", "", ""};
  for (auto& s : call.output_elements) args >> s;
  std::string rest;
  std::getline(args, rest);
  if (!args || rest.empty() || rest.front() != '\t') return "error malformed run command";
  rest.erase(0, 1);
  call.out_path = field(rest);
  call.attachment = field(rest);
  call.arguments = rest;
  const std::optional<backend::Target> target = tune::parse_target(name);
  if (!target) return "error no backend is named '" + name + "' (" + tune::target_names() + ")";
  return tune::backend_for(*target).serve(call);
}

}  // namespace

int serve_runner(int in_fd, int out_fd) {
  FILE* in = ::fdopen(in_fd, "r");
  if (!in) return 2;
  backend::WorkerInputs inputs;
  char* buf = nullptr;
  size_t cap = 0;
  while (::getline(&buf, &cap, in) > 0) {
    std::string line(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    std::istringstream args(line);
    std::string command;
    args >> command;
    std::string reply;
    try {
      if (command == "inputs") reply = take_inputs(inputs, args);
      else if (command == "run") reply = run(inputs, args);
      else reply = "error unknown command '" + command + "'";
    } catch (const std::exception& e) {
      reply = std::string("error ") + e.what();
    }
    std::replace(reply.begin(), reply.end(), '\n', ' ');
    reply += "\n";
    if (::write(out_fd, reply.data(), reply.size()) != static_cast<ssize_t>(reply.size())) break;
  }
  std::free(buf);
  return 0;
}

}  // namespace prism::runner
