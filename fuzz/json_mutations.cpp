// Structure-aware mutations of JSON-RPC messages (mutator.h). A message is parsed, values are
// replaced by placeholders, and the placeholders are replaced by raw text after printing, so the
// result can hold what no JSON library prints: 1e400, lone surrogates, 200,000 levels of nesting.
#include <nlohmann/json.hpp>

#include "fuzz/mutator.h"

namespace prism::fuzz {

namespace {

using json = nlohmann::json;

const std::vector<std::string> kNumbers = {"1e400",
                                           "-1e400",
                                           "-1e309",
                                           "1e309",
                                           "1e-400",
                                           "-1e-400",
                                           "4.9e-324",
                                           "2.2250738585072014e-308",
                                           "1.7976931348623157e308",
                                           "18446744073709551616",
                                           "18446744073709551615",
                                           "9223372036854775807",
                                           "9223372036854775808",
                                           "-9223372036854775808",
                                           "-9223372036854775809",
                                           "2147483648",
                                           "-2147483649",
                                           "4294967296",
                                           "123456789012345678901234567890123456789",
                                           "-0",
                                           "-0.0",
                                           "0.0",
                                           "0",
                                           "-1",
                                           "1.5",
                                           "1e2",
                                           "1E+2147483648",
                                           "1e-2147483649",
                                           "0.000000000000000000000000000001",
                                           "65536",
                                           "1000000000"};
const std::vector<std::string> kNotJsonNumbers = {"NaN", "-NaN", "Infinity", "-Infinity", "inf", "nan", "0x10",
                                                  "01",  "1.",   "+1",       ".5",        "1e",  "--1", "1e+"};
const std::vector<std::string> kStrings = {"\"\\ud800\"",
                                           "\"\\udfff\"",
                                           "\"\\ud800\\u0041\"",
                                           "\"\\udbff\\udfff\"",
                                           "\"\\ud83d\\ude00\"",
                                           "\"\\u0000\"",
                                           "\"\xff\xfe\"",
                                           "\"\xc0\x80\"",
                                           "\"\xed\xa0\x80\"",
                                           "\"\\x41\"",
                                           "\"\t\"",
                                           "\"\"",
                                           "\"8\"",
                                           "\"-1\"",
                                           "\"1e400\"",
                                           "\"untitled:x\"",
                                           "\"rms_linear\"",
                                           "\"lora\"",
                                           "\"program p(X: f32[n]) { return X }\"",
                                           "\"\\\\\"",
                                           "\"\xe2\x80\xa8\""};
const std::vector<std::string> kWrongTypes = {"null", "true",      "false", "\"\"", "\"s\"", "[]",     "{}",
                                              "[1]",  "{\"a\":1}", "0",     "-1",   "1.5",   "[null]", "{\"\":null}"};
const std::vector<std::string> kPlausible = {"0",
                                             "1",
                                             "2",
                                             "3",
                                             "8",
                                             "16",
                                             "true",
                                             "false",
                                             "null",
                                             "\"rms_linear\"",
                                             "\"lora\"",
                                             "\"from_file\"",
                                             "\"cpu\"",
                                             "\"cuda\"",
                                             "\"untitled:rms\"",
                                             "\"untitled:lora\"",
                                             "\"X\"",
                                             "{}",
                                             "[]",
                                             "{\"n\":2,\"d\":4}",
                                             "\"matmul(X, W)\""};
const std::vector<std::string> kMethods = {"initialize",
                                           "initialized",
                                           "shutdown",
                                           "exit",
                                           "daemon/status",
                                           "program/open",
                                           "program/change",
                                           "program/close",
                                           "program/list",
                                           "program/show",
                                           "program/run",
                                           "program/equivalent",
                                           "egraph/stats",
                                           "search/run",
                                           "search/candidates",
                                           "tune/run",
                                           "tune/results",
                                           "kernel/source",
                                           "$/cancelRequest",
                                           "$/progress",
                                           "$/setTrace",
                                           "program/diagnostics",
                                           "program/frobnicate",
                                           "",
                                           "program/",
                                           "/",
                                           "PROGRAM/LIST",
                                           "program/list ",
                                           "rpc.discover",
                                           "textDocument/didOpen",
                                           "textDocument/signatureHelp",
                                           "textDocument/codeLens",
                                           "textDocument/formatting",
                                           "workspace/executeCommand",
                                           "window/workDoneProgress/cancel",
                                           "daemon/status\\u0000"};

// Every value inside `j` (not `j` itself) by its JSON pointer.
void collect(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  if (out.size() > 4096) return;
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) out.push_back(at / key), collect(value, at / key, out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) out.push_back(at / i), collect(j[i], at / i, out);
  }
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
}

}  // namespace

std::string Mutator::extreme_number() { return chance(0.85) ? pick(kNumbers) : pick(kNotJsonNumbers); }
std::string Mutator::odd_string() { return pick(kStrings); }
std::string Mutator::wrong_type_value() { return pick(kWrongTypes); }

std::string Mutator::any_id() {
  switch (below(6)) {
    case 0: return std::to_string(next() % 1000);
    case 1: return "\"id-" + std::to_string(next() % 1000) + "\"";
    case 2: return extreme_number();
    case 3: return wrong_type_value();
    case 4: return odd_string();
    default: return "\"" + std::string(1 + below(100000), 'i') + "\"";
  }
}

std::string Mutator::deep_nesting() {
  static const std::vector<size_t> kDepths = {16, 200, 1000, 4096, 20000, 100000, 200000};
  size_t depth = pick(kDepths);
  std::string open, close, inner = "1";
  switch (below(4)) {
    case 0: open = "[", close = "]"; break;
    case 1: open = "{\"a\":", close = "}"; break;
    case 2: open = "[{\"a\":", close = "}]"; break;
    default: open = "[", close = "", inner = "";  // never closed: invalid JSON, as deep as the rest
  }
  std::string out;
  out.reserve(depth * (open.size() + close.size()) + 1);
  for (size_t i = 0; i < depth; ++i) out += open;
  out += inner;
  for (size_t i = 0; i < depth && !close.empty(); ++i) out += close;
  return out;
}

std::string Mutator::huge_string() {
  static const std::vector<size_t> kSizes = {100, 1 << 10, 1 << 12, 1 << 16, 1 << 20};
  size_t size = chance(0.01) ? 6 << 20 : pick(kSizes);
  std::string unit = below(3) == 0 ? "\\u00e9" : (chance(0.5) ? "\xc3\xa9" : "a");
  std::string out = "\"";
  out.reserve(size + 2);
  while (out.size() < size) out += unit;
  return out + "\"";
}

std::string Mutator::mutate_json(const std::string& body, const std::vector<std::string>& corpus) {
  json msg = json::parse(body, nullptr, false);
  if (msg.is_discarded() || chance(0.05)) return mutate_bytes(body, corpus);
  if (chance(0.02)) return chance(0.5) ? wrong_type_value() : extreme_number();

  std::vector<std::string> raws;  // placeholder k is printed as "\u0001k\u0001"
  auto raw = [&](std::string text) {
    raws.push_back(std::move(text));
    return json(std::string("\x01") + std::to_string(raws.size() - 1) + "\x01");
  };
  int edits = 1 + int(below(3));
  for (int e = 0; e < edits && msg.is_object(); ++e) {
    std::vector<json::json_pointer> at;
    if (msg.contains("params")) collect(msg["params"], json::json_pointer("/params"), at);
    if (!at.empty() && chance(0.6)) {  // a value inside params: plausible, extreme or of the wrong type, the envelope intact
      msg[at[below(at.size())]] = raw(chance(0.5) ? pick(kPlausible) : chance(0.5) ? extreme_number() : wrong_type_value());
      continue;
    }
    if (at.empty() || chance(0.2)) collect(msg, json::json_pointer(), at);
    if (at.empty()) break;
    const json::json_pointer& target = at[below(at.size())];
    switch (below(10)) {
      case 0: msg[target] = raw(extreme_number()); break;
      case 1: msg[target] = raw(odd_string()); break;
      case 2: msg[target] = raw(wrong_type_value()); break;
      case 3: msg[target] = raw(chance(0.3) ? (chance(0.5) ? deep_nesting() : huge_string()) : odd_string()); break;
      case 4: msg["method"] = chance(0.8) ? json(pick(kMethods)) : raw(chance(0.5) ? odd_string() : huge_string()); break;
      case 5:
        if (chance(0.3)) msg.erase("id");  // a notification
        else msg["id"] = raw(any_id());
        break;
      case 6:
        if (chance(0.3)) msg["jsonrpc"] = chance(0.5) ? json("1.0") : raw(wrong_type_value());
        break;
      case 7:  // drop a key or an element
        if (!target.empty()) {
          json& parent = msg[target.parent_pointer()];
          if (parent.is_object()) parent.erase(target.back());
          else if (parent.is_array() && !parent.empty()) parent.erase(parent.begin());
        }
        break;
      case 8: msg["params"] = chance(0.5) ? raw(wrong_type_value()) : raw(deep_nesting()); break;
      case 9:  // an unknown key
        if (msg[target].is_object()) msg[target]["zz" + std::to_string(below(10))] = raw(wrong_type_value());
        break;
    }
  }
  std::string text = msg.dump(-1, ' ', false, json::error_handler_t::replace);
  for (size_t k = 0; k < raws.size(); ++k) replace_all(text, "\"\\u0001" + std::to_string(k) + "\\u0001\"", raws[k]);

  if (chance(0.06) && text.size() > 1) {  // a duplicate key: the first or the last wins
    static const std::vector<std::string> kDuplicates = {
        "\"id\":7,", "\"method\":\"program/list\",", "\"jsonrpc\":\"1.0\",", "\"params\":{},", "\"id\":null,", "\"method\":\"exit\","};
    text.insert(1, pick(kDuplicates));
  }
  if (chance(0.04)) {  // a batch
    std::string batch = "[" + text;
    for (size_t i = below(4); i > 0; --i) batch += "," + pick(corpus);
    text = chance(0.1) ? "[]" : batch + "]";
  }
  if (chance(0.05)) text.resize(below(text.size() + 1));  // truncated
  if (chance(0.04)) text = mutate_bytes(std::move(text), corpus, 3);
  return text;
}

}  // namespace prism::fuzz
