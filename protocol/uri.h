// Document names: clients send `file://` URIs (editors), plain paths (REPL, scripts), or any other
// URI ("untitled:1"). URIs are kept verbatim because editors match pushed diagnostics by their
// exact uri string; plain paths become `file://` URIs so that a path and the editor's URI of the
// same file name one document.
#pragma once
#include <optional>
#include <string>

namespace prism::protocol {

// "file:///abs/path" for a path (relative paths resolve against the daemon's working directory);
// any string with a URI scheme is returned unchanged.
std::string document_uri(const std::string& uri_or_path);
// The local path a `file://` URI (or plain path) names; nullopt for other schemes or a remote host.
std::optional<std::string> local_path(const std::string& uri_or_path);

std::string percent_encode_path(const std::string& path);
std::optional<std::string> percent_decode(const std::string& text);

}  // namespace prism::protocol
