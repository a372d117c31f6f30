#include "protocol/params.h"

#include <cmath>
#include <cstdint>

namespace prism::protocol {

namespace {
const json kEmptyObject = json::object();
}

const json& params_object(const json& params) {
  // Absent, null, or an empty array (Lua's empty table, as Neovim sends it): no params.
  if (params.is_null() || (params.is_array() && params.empty())) return kEmptyObject;
  if (!params.is_object()) throw invalid_params("params", "params must be an object");
  return params;
}

std::string field_path(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// A field set to null counts as absent, as LSP clients commonly send optional fields that way.
const json* find_field(const json& obj, const std::string& key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string require_string(const json& obj, const std::string& key, const std::string& prefix) {
  auto v = optional_string(obj, key, prefix);
  if (!v) throw invalid_params(field_path(prefix, key), "missing string param '" + field_path(prefix, key) + "'");
  return *v;
}

std::optional<std::string> optional_string(const json& obj, const std::string& key, const std::string& prefix) {
  const json* v = find_field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw invalid_params(field_path(prefix, key), "'" + field_path(prefix, key) + "' must be a string");
  return v->get<std::string>();
}

std::optional<bool> optional_bool(const json& obj, const std::string& key, const std::string& prefix) {
  const json* v = find_field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw invalid_params(field_path(prefix, key), "'" + field_path(prefix, key) + "' must be true or false");
  return v->get<bool>();
}

int64_t require_int(const json& obj, const std::string& key, const std::string& prefix) {
  auto v = optional_int(obj, key, prefix);
  if (!v) throw invalid_params(field_path(prefix, key), "missing integer param '" + field_path(prefix, key) + "'");
  return *v;
}

std::optional<double> optional_number(const json& obj, const std::string& key, const std::string& prefix) {
  const json* v = find_field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw invalid_params(field_path(prefix, key), "'" + field_path(prefix, key) + "' must be a number");
  return v->get<double>();
}

std::optional<int64_t> optional_int(const json& obj, const std::string& key, const std::string& prefix) {
  const json* v = find_field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) return v->get<int64_t>();
  } else if (v->is_number_integer()) {
    return v->get<int64_t>();
  } else if (v->is_number_float()) {
    // 8.0 is an integer to JavaScript clients.
    double d = v->get<double>();
    if (std::isfinite(d) && std::fabs(d) < 9.0e18 && d == std::floor(d)) return static_cast<int64_t>(d);
  }
  throw invalid_params(field_path(prefix, key), "'" + field_path(prefix, key) + "' must be an integer");
}

const json* optional_object(const json& obj, const std::string& key, const std::string& prefix) {
  const json* v = find_field(obj, key);
  if (v && !v->is_object()) throw invalid_params(field_path(prefix, key), "'" + field_path(prefix, key) + "' must be an object");
  return v;
}

const json& require_array(const json& obj, const std::string& key, const std::string& prefix) {
  const json* v = find_field(obj, key);
  if (!v) throw invalid_params(field_path(prefix, key), "missing array param '" + field_path(prefix, key) + "'");
  if (!v->is_array()) throw invalid_params(field_path(prefix, key), "'" + field_path(prefix, key) + "' must be an array");
  return *v;
}

}  // namespace prism::protocol
