// Typed access to request params; every failure is InvalidParams naming the field.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/jsonrpc.h"

namespace prism::protocol {

// `params` as an object ({} when absent, null or an empty array); other arrays and scalars are rejected.
const json& params_object(const json& params);

// `prefix` is the path of `obj` itself ("" at the top, "changes[0].range" deeper).
std::string field_path(const std::string& prefix, const std::string& key);

const json* find_field(const json& obj, const std::string& key);

std::string require_string(const json& obj, const std::string& key, const std::string& prefix = "");
std::optional<std::string> optional_string(const json& obj, const std::string& key, const std::string& prefix = "");
std::optional<bool> optional_bool(const json& obj, const std::string& key, const std::string& prefix = "");
int64_t require_int(const json& obj, const std::string& key, const std::string& prefix = "");
std::optional<int64_t> optional_int(const json& obj, const std::string& key, const std::string& prefix = "");
std::optional<double> optional_number(const json& obj, const std::string& key, const std::string& prefix = "");
// A nested object; nullptr when absent (or null).
const json* optional_object(const json& obj, const std::string& key, const std::string& prefix = "");
const json& require_array(const json& obj, const std::string& key, const std::string& prefix = "");

}  // namespace prism::protocol
