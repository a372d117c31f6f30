// program/list, program/show and program/run (the long one: it runs on Options::spawn).
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
  // Remember the defining document's generation: an edit while the run is under way makes its
  // result stale (ContentModified). An unknown program is reported by the engine's run itself.
  std::string uri;
  for (const auto& p : workspace_.programs())
    if (p.name == request.program) uri = p.uri;
  const uint64_t generation_at_start = uri.empty() ? 0 : generation(uri);

  const std::optional<json> id = message.id;
  std::shared_ptr<CancelToken> token =
      id ? session->start_request(*id) : std::make_shared<CancelToken>();

  auto work = [this, session, message, request = std::move(request), uri, generation_at_start, token]() {
    json response;
    try {
      token->check();  // cancelled while it waited for a worker
      RunResult result = workspace_.run(request, token.get());
      token->check();
      if (!uri.empty() && generation(uri) != generation_at_start)
        response = error_reply(*session, message, kContentModified,
                               "program '" + request.program + "' changed while it ran");
      else
        response = make_result(message.id.value_or(nullptr), run_result_json(result));
    } catch (const Error& e) {
      bool cancelled = e.kind() == Error::Kind::Cancelled;
      response = error_reply(*session, message, cancelled ? kRequestCancelled : kRequestFailed,
                             cancelled ? "request cancelled" : e.what());
    } catch (const std::exception& e) {
      response = error_reply(*session, message, kInternalError, std::string("internal error: ") + e.what());
    }
    if (message.id) {
      session->finish_request(*message.id, token.get());
      session->send(response);
    }
  };
  if (options_.spawn)
    options_.spawn(std::move(work));
  else
    work();
}

}  // namespace prism::protocol
