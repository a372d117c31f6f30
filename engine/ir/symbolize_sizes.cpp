#include "engine/ir/symbolize_sizes.h"

#include <algorithm>
#include <set>
#include <vector>

namespace prism {

namespace {

void collect_sizes(const std::vector<Dim>& shape, std::set<int64_t>& into) {
  for (const Dim& d : shape)
    if (std::optional<int64_t> v = d.as_integer(); v && *v >= 2) into.insert(*v);
}

}  // namespace

SymbolizedSizes symbolize_sizes(const Program& lowered) {
  SymbolizedSizes out{lowered, {}};
  std::set<int64_t> fixed, tied;
  for (int id : lowered.inputs) collect_sizes(lowered.value(id).type.shape, fixed);
  for (const Value& v : lowered.values) {
    if (v.op != Op::Reshape && v.op != Op::Split && v.op != Op::Concat) continue;
    collect_sizes(v.type.shape, tied);
    for (int o : v.operands) collect_sizes(lowered.value(o).type.shape, tied);
  }
  std::map<int64_t, Dim> dim_of;
  for (int64_t size : fixed) {
    if (tied.count(size)) continue;
    std::string name = "__s" + std::to_string(size);
    while (std::find(lowered.dims.begin(), lowered.dims.end(), name) != lowered.dims.end()) name += "_";
    dim_of[size] = Dim::symbol(name);
    out.sizes[name] = size;
  }
  if (dim_of.empty()) return out;
  for (Value& v : out.program.values)
    for (Dim& d : v.type.shape)
      if (std::optional<int64_t> size = d.as_integer(); size && dim_of.count(*size)) d = dim_of.at(*size);
  for (const auto& [name, size] : out.sizes) out.program.dims.push_back(name);
  return out;
}

std::string with_sizes(std::string text, const std::map<std::string, int64_t>& sizes) {
  // The longest names first: __s10 must not rewrite the front of __s1024.
  std::vector<std::pair<std::string, int64_t>> by_length(sizes.begin(), sizes.end());
  std::sort(by_length.begin(), by_length.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [name, size] : by_length)
    for (size_t at = 0; (at = text.find(name, at)) != std::string::npos;) {
      text.replace(at, name.size(), std::to_string(size));
      at += std::to_string(size).size();
    }
  // A name an elided text cut short ("__s6…" in a proof's term) keeps the digits it shows.
  for (size_t at = 0; !sizes.empty() && (at = text.find("__s", at)) != std::string::npos;) text.erase(at, 3);
  return text;
}

}  // namespace prism
