// program/list, program/show, and the long ones that run on Options::spawn: program/run and
// program/equivalent.
#include <algorithm>
#include <set>

#include "protocol/convert.h"
#include "protocol/params.h"
#include "protocol/server.h"

namespace prism::protocol {

json Server::list() {
  json programs = json::array();
  for (const auto& p : workspace_.programs()) programs.push_back(summary_json(p));
  return json{{"programs", std::move(programs)}};
}

json Server::show(const json& raw) {
  const json& params = params_object(raw);
  return detail_json(workspace_.show(require_string(params, "program")));
}

void Server::run(const SessionPtr& session, const Incoming& message) {
  RunRequest request = parse_run_request(message.params);
  // An unknown program is reported by the engine's run itself.
  long_request(session, message, {request.program}, [this, request](const CancelToken& token) {
    return run_result_json(workspace_.run(request, &token));
  });
}

void Server::equivalent(const SessionPtr& session, const Incoming& message) {
  const json& params = params_object(message.params);
  std::string a = require_string(params, "a");
  std::string b = require_string(params, "b");
  EquivLimits limits = parse_equiv_limits(params);
  // Either side may be an inline expression; only program names can go stale.
  long_request(session, message, {a, b}, [this, a, b, limits](const CancelToken& token) {
    return equiv_result_json(workspace_.equivalent(a, b, limits, &token));
  });
}

void Server::long_request(const SessionPtr& session, const Incoming& message, std::vector<std::string> programs,
                          std::function<json(const CancelToken&)> work) {
  // The token answers both $/cancelRequest (through the session) and edits of the defining
  // documents (through runs_).
  std::shared_ptr<CancelToken> token =
      message.id ? session->start_request(*message.id) : std::make_shared<CancelToken>();
  uint64_t run_id = 0;
  {
    std::lock_guard lock(docs_mutex_);
    run_id = next_run_++;
    runs_[run_id] = ActiveRun{{}, token, false};
  }
  auto task = [this, session, message, programs = std::move(programs), work = std::move(work), token, run_id]() {
    json response;
    try {
      token->check();  // cancelled while it waited for a worker
      // Which documents define the programs: their edits from now on make the result stale.
      // (Looked up here, not on the I/O thread, since the engine may be busy with other work.)
      std::set<std::string> uris;
      for (const auto& p : workspace_.programs())
        if (std::find(programs.begin(), programs.end(), p.name) != programs.end()) uris.insert(p.uri);
      {
        std::lock_guard lock(docs_mutex_);
        runs_[run_id].uris = std::move(uris);
      }
      json result = work(*token);
      token->check();
      response = make_result(message.id.value_or(nullptr), std::move(result));
    } catch (const Error& e) {
      response = e.kind() == Error::Kind::Cancelled
                     ? error_reply(*session, message, kRequestCancelled, "request cancelled")
                     : error_reply(*session, message, kRequestFailed, e.what(), error_data(e));
    } catch (const std::exception& e) {
      response = error_reply(*session, message, kInternalError, std::string("internal error: ") + e.what());
    }
    bool modified = false;
    {
      std::lock_guard lock(docs_mutex_);
      modified = runs_[run_id].modified;
      runs_.erase(run_id);
    }
    // An edit of a program while the request ran makes any answer stale, the cancellation it
    // caused included.
    if (modified) {
      std::string names;
      for (const auto& p : programs) names += (names.empty() ? "'" : ", '") + p + "'";
      response = error_reply(*session, message, kContentModified, "program " + names + " changed while it ran");
    }
    if (message.id) {
      session->finish_request(*message.id, token.get());
      session->send(response);
    }
  };
  if (options_.spawn)
    options_.spawn(std::move(task));
  else
    task();
}

}  // namespace prism::protocol
