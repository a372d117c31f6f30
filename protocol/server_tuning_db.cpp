// tuningDb/export and tuningDb/import: the tuning DB as one text, to merge machines' DBs
// (docs/tuning.md, "Sharing a tuning DB"; docs/protocol.md).
#include "protocol/convert.h"
#include "protocol/params.h"
#include "protocol/server.h"

namespace prism::protocol {

json Server::export_tuning_db(const json& raw) {
  const json& params = raw.is_null() ? json::object() : params_object(raw);
  const tune::DbExport db = workspace_.export_tuning_db(optional_string(params, "program").value_or(""), parse_bindings(params));
  return {{"entries", db.entries}, {"text", db.text}};
}

json Server::import_tuning_db(const json& raw) {
  const json& params = params_object(raw);
  const tune::DbImport done = workspace_.import_tuning_db(require_string(params, "text"));
  return {{"added", done.added}, {"present", done.present}, {"merged", done.merged}, {"rejected", done.rejected}, {"problems", done.problems}};
}

}  // namespace prism::protocol
